"""The container files stay consistent with the code (no Docker engine runs here, so this
checks what can be checked without one: structure, paths, configuration names, and what
Debian's docker-compose 1.29 makes of the compose file)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from memexdb.config import Settings, env_name

ROOT = Path(__file__).resolve().parent.parent
# name:X.Y.Z-..., never a moving tag such as pg17 or 3.11-slim
EXACT_TAG = re.compile(r"^[\w./-]+:\d+\.\d+\.\d+-[\w.-]+$")


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
    # every MEMEX_* variable the stack sets is one the service reads (memexdb.config);
    # PGPASSWORD is libpq's
    known = {env_name(field) for field in Settings.model_fields}
    for name in env:
        assert name in known or name == "PGPASSWORD", f"{name} is not read by memexdb"
    assert EXACT_TAG.match(services["postgres"]["image"]), services["postgres"]["image"]
    for name in ("postgres", "memexdb"):
        assert services[name]["restart"] in ("unless-stopped", "always", "on-failure"), name
    # healthy only once the real server answers a query over TCP (the first boot's init
    # server listens on the unix socket alone)
    check = " ".join(services["postgres"]["healthcheck"]["test"])
    assert "-h 127.0.0.1" in check and "select 1" in check, check
    assert "change-me" not in (ROOT / "docker-compose.yml").read_text()


def test_dockerfile_copies_what_exists() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (.+) \S+$", dockerfile, flags=re.M):
        for path in source.split():
            assert (ROOT / path).exists(), path
    assert 'CMD ["memexdb", "serve"]' in dockerfile
    (base,) = re.findall(r"^FROM (\S+)", dockerfile, flags=re.M)
    assert EXACT_TAG.match(base), base


def compose_config(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` on our file, as Debian's docker-compose 1.29 reads it (no
    engine needed). Skipped without it, except in CI (CI set), where .ci/run installs it."""
    if shutil.which("docker-compose") is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is not installed, but CI needs it")
        pytest.skip("docker-compose is not installed (apt-get install docker-compose)")
    env_file = tmp_path / "empty.env"  # not the project's .env, whatever it holds
    env_file.write_text("")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "COMPOSE_"))}
    compose_file = str(ROOT / "docker-compose.yml")
    return subprocess.run(
        ["docker-compose", "-f", compose_file, "--env-file", str(env_file), "config"],
        env={**clean, **env},
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_config_resolves_with_a_password(tmp_path: Path) -> None:
    password = "p@ss:/w rd"  # libpq reads PGPASSWORD, so no URL-escaping is needed
    res = compose_config(tmp_path, MEMEX_DB_PASSWORD=password)
    assert res.returncode == 0, res.stderr
    services: dict[str, Any] = yaml.safe_load(res.stdout)["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == password
    assert services["memexdb"]["environment"]["PGPASSWORD"] == password
    assert password not in services["memexdb"]["environment"]["MEMEX_DATABASE_URL"]
    assert services["memexdb"]["build"]["context"] == str(ROOT)


@pytest.mark.parametrize("env", [{}, {"MEMEX_DB_PASSWORD": ""}], ids=["unset", "empty"])
def test_compose_config_requires_the_password(tmp_path: Path, env: dict[str, str]) -> None:
    res = compose_config(tmp_path, **env)
    assert res.returncode != 0, res.stdout
    assert "set MEMEX_DB_PASSWORD" in res.stderr, res.stderr
