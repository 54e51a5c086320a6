"""The container files stay consistent with the code (no Docker engine runs here, so this
checks what can be checked without one: structure, paths and configuration names)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from memexdb.config import Settings, env_name

ROOT = Path(__file__).resolve().parent.parent


def test_compose_file_is_consistent() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) >= {"postgres", "memexdb"}
    assert "pgvector" in services["postgres"]["image"]
    build = services["memexdb"]["build"]
    assert (ROOT / build["context"] / build["dockerfile"]).is_file()
    env = services["memexdb"]["environment"]
    assert env["MEMEX_DATABASE_URL"].startswith("postgresql://")
    assert services["memexdb"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    # every MEMEX_* variable the stack sets is one the service reads (memexdb.config)
    known = {env_name(field) for field in Settings.model_fields}
    for name in env:
        assert name in known, f"{name} is not read by memexdb"


def test_dockerfile_copies_what_exists() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (.+) \S+$", dockerfile, flags=re.M):
        for path in source.split():
            assert (ROOT / path).exists(), path
    assert 'CMD ["memexdb", "serve"]' in dockerfile
