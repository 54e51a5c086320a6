"""The container files stay consistent with the code (no Docker engine runs here, so this
checks what can be checked without one: structure, paths, pins, configuration names, what
Debian's docker-compose 1.29 makes of the compose file, and what Debian's promtool makes
of the Prometheus config). tests/test_docker_stack.py runs the entrypoints, Prometheus and
the dashboard's queries against a live service."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from memexdb.config import Settings, env_name
from tests.live_service import required

ROOT = Path(__file__).resolve().parent.parent
# name:X.Y.Z or name:vX.Y.Z-..., never a moving tag such as pg17, 3.11-slim or latest
EXACT_TAG = re.compile(r"^[\w./-]+:v?\d+\.\d+\.\d+(-[\w.-]+)?$")
DOCKER = ROOT / "docker"
SECRETS = {
    "MEMEX_DB_PASSWORD": "p@ss:/w rd",  # libpq reads PGPASSWORD: no URL-escaping needed
    "MEMEX_METRICS_TOKEN": "scrape-token",
    "GRAFANA_ADMIN_PASSWORD": "grafana-secret",
}


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def from_images(dockerfile: Path) -> list[str]:
    return re.findall(r"^FROM (\S+)", dockerfile.read_text(), flags=re.M)


def test_compose_file_is_consistent() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "memexdb", "prometheus", "grafana"}
    for name in ("postgres", "memexdb"):
        build = services[name]["build"]
        assert (ROOT / build["context"] / build["dockerfile"]).is_file(), name
    assert services["postgres"]["build"]["dockerfile"] == "docker/postgres/Dockerfile"
    env = services["memexdb"]["environment"]
    assert env["MEMEX_DATABASE_URL"].startswith("postgresql://")
    assert services["memexdb"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    # every MEMEX_* variable the stack sets is one the service reads (memexdb.config);
    # PGPASSWORD is libpq's
    known = {env_name(field) for field in Settings.model_fields}
    for name in env:
        assert name in known or name == "PGPASSWORD", f"{name} is not read by memexdb"
    for name in ("prometheus", "grafana"):
        assert EXACT_TAG.match(services[name]["image"]), services[name]["image"]
    for name, service in services.items():
        assert service["restart"] in ("unless-stopped", "always", "on-failure"), name
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    # healthy only once the real server answers a query over TCP (the first boot's init
    # server listens on the unix socket alone)
    check = " ".join(services["postgres"]["healthcheck"]["test"])
    assert "-h 127.0.0.1" in check and "select 1" in check, check
    # the service is healthy once ready (docker/Dockerfile HEALTHCHECK too)
    check = " ".join(services["memexdb"]["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/health/ready" in check, check
    assert "change-me" not in (ROOT / "docker-compose.yml").read_text()


def test_postgres_image_pins_pgvector_and_pg_cron() -> None:
    """FROM the exact pgvector tag, PGDG's pg_cron for that PostgreSQL at an exact version,
    pg_cron preloaded for the database the compose file creates."""
    dockerfile = DOCKER / "postgres" / "Dockerfile"
    (base,) = from_images(dockerfile)
    assert base == "pgvector/pgvector:0.8.1-pg17-bookworm", base
    text = dockerfile.read_text()
    (pin,) = re.findall(r"^ARG PG_CRON_DEB=(\S+)$", text, flags=re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+-\d+\.pgdg12\+\d+", pin), pin  # bookworm's PGDG build
    assert '"postgresql-17-cron=${PG_CRON_DEB}"' in text
    database = compose()["services"]["postgres"]["environment"]["POSTGRES_DB"]
    assert '"-c", "shared_preload_libraries=pg_cron"' in text
    assert f'"-c", "cron.database_name={database}"' in text
    for source in re.findall(r"^COPY (\S+) ", text, flags=re.M):
        assert (ROOT / source).exists(), source


def test_dockerfile_copies_what_exists() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (.+) \S+$", dockerfile, flags=re.M):
        for path in source.split():
            assert (ROOT / path).exists(), path
    # docker/entrypoint.sh: migrate --schedule, then exec serve (tests/test_docker_stack.py)
    assert "COPY docker/entrypoint.sh /usr/local/bin/memexdb-entrypoint" in dockerfile
    assert 'ENTRYPOINT ["memexdb-entrypoint"]' in dockerfile
    assert 'CMD ["serve"]' in dockerfile
    assert "urlopen('http://127.0.0.1:8000/health/ready', timeout=3)" in dockerfile
    (base,) = from_images(DOCKER / "Dockerfile")
    assert EXACT_TAG.match(base), base
    for script in (DOCKER / "entrypoint.sh", DOCKER / "prometheus" / "entrypoint.sh"):
        assert os.access(script, os.X_OK), script
        res = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr


def test_prometheus_scrapes_the_service_with_a_bearer_token() -> None:
    """Its one job scrapes the compose service memexdb at the port the service listens
    on, at /metrics, with the bearer token the entrypoint writes from MEMEX_METRICS_TOKEN."""
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    services = compose()["services"]
    port = Settings.model_fields["port"].default
    assert (
        f"ENV MEMEX_HOST=0.0.0.0 \\\n    MEMEX_PORT={port}" in (DOCKER / "Dockerfile").read_text()
    )
    assert job["static_configs"] == [{"targets": [f"memexdb:{port}"]}]
    assert "memexdb" in services
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job.get("scheme", "http") == "http"
    auth = job["authorization"]
    assert auth["type"] == "Bearer" and set(auth) == {"type", "credentials_file"}, auth
    entrypoint = (DOCKER / "prometheus" / "entrypoint.sh").read_text()
    assert f"PROMETHEUS_TOKEN_FILE:-{auth['credentials_file']}}}" in entrypoint
    prometheus = services["prometheus"]
    assert auth["credentials_file"].startswith("/prometheus/")  # its data volume, its own
    assert "prometheus-data:/prometheus" in prometheus["volumes"]
    assert "MEMEX_METRICS_TOKEN" in prometheus["environment"]
    assert "MEMEX_METRICS_TOKEN" in services["memexdb"]["environment"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in prometheus["volumes"] if m.startswith(".")}
    assert mounts["/etc/prometheus/prometheus.yml"] == "./docker/prometheus/prometheus.yml"
    assert mounts["/etc/prometheus/entrypoint.sh"] == "./docker/prometheus/entrypoint.sh"
    # the recording rules, beside the config that names them relative to itself
    rules = "memex_compat.rules.yml"
    assert mounts[f"/etc/prometheus/{rules}"] == f"./docker/prometheus/{rules}"
    config = yaml.safe_load((DOCKER / "prometheus" / "prometheus.yml").read_text())
    assert config["rule_files"] == [rules]
    assert prometheus["entrypoint"] == ["/bin/sh", "/etc/prometheus/entrypoint.sh"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]


def test_promtool_accepts_the_prometheus_config(tmp_path: Path) -> None:
    """Debian's promtool (2.42) checks the config; the token file it names must exist,
    so the copy names a scratch one."""
    promtool = required(
        shutil.which("promtool"), "promtool is not installed (apt-get install prometheus)"
    )
    text = (DOCKER / "prometheus" / "prometheus.yml").read_text()
    token = tmp_path / "token"
    token.write_text("t")
    config = tmp_path / "prometheus.yml"
    config.write_text(text.replace("/prometheus/.memex_metrics_token", str(token)))
    # the rule file it names, beside it (promtool checks the rules too)
    rules = DOCKER / "prometheus" / "memex_compat.rules.yml"
    shutil.copy(rules, tmp_path / rules.name)
    res = subprocess.run(
        [promtool, "check", "config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout + res.stderr, res.stdout + res.stderr


def test_grafana_is_provisioned_with_the_dashboard() -> None:
    grafana = compose()["services"]["grafana"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in grafana["volumes"] if m.startswith(".")}
    assert mounts["/etc/grafana/provisioning"] == "./docker/grafana/provisioning"
    assert mounts["/var/lib/grafana/dashboards"] == "./docker/grafana/dashboards"
    provisioning = DOCKER / "grafana" / "provisioning"
    (source,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())[
        "datasources"
    ]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "memexdb.yml").read_text())[
        "providers"
    ]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    dashboards = list((DOCKER / "grafana" / "dashboards").glob("*.json"))
    assert [d.name for d in dashboards] == ["memexdb.json"]
    dashboard = json.loads(dashboards[0].read_text())
    assert dashboard["uid"] == "memexdb" and dashboard["panels"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": source["uid"]}, panel
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"]), panel
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    # no default admin password: only from the environment, required
    env = grafana["environment"]
    assert env["GF_SECURITY_ADMIN_PASSWORD"].startswith("${GRAFANA_ADMIN_PASSWORD:?"), env
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "false" and env["GF_USERS_ALLOW_SIGN_UP"] == "false"


def compose_config(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`docker-compose config` on our file, as Debian's docker-compose 1.29 reads it (no
    engine needed). Skipped without it, except in CI (CI set), where .ci/run installs it."""
    required(
        shutil.which("docker-compose"),
        "docker-compose is not installed (apt-get install docker-compose)",
    )
    env_file = tmp_path / "empty.env"  # not the project's .env, whatever it holds
    env_file.write_text("")
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEMEX_", "COMPOSE_", "GRAFANA_"))
    }
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


def test_compose_config_resolves_with_the_secrets(tmp_path: Path) -> None:
    res = compose_config(tmp_path, **SECRETS)
    assert res.returncode == 0, res.stderr
    services: dict[str, Any] = yaml.safe_load(res.stdout)["services"]
    password = SECRETS["MEMEX_DB_PASSWORD"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == password
    assert services["memexdb"]["environment"]["PGPASSWORD"] == password
    assert password not in services["memexdb"]["environment"]["MEMEX_DATABASE_URL"]
    assert services["memexdb"]["build"]["context"] == str(ROOT)
    assert services["postgres"]["build"]["context"] == str(ROOT)
    token = SECRETS["MEMEX_METRICS_TOKEN"]
    assert services["memexdb"]["environment"]["MEMEX_METRICS_TOKEN"] == token
    assert services["prometheus"]["environment"]["MEMEX_METRICS_TOKEN"] == token
    grafana = services["grafana"]["environment"]
    assert grafana["GF_SECURITY_ADMIN_PASSWORD"] == SECRETS["GRAFANA_ADMIN_PASSWORD"]
    # the mounted files exist (compose resolves them against the project folder)
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if source.startswith("/"):
                assert Path(source).exists(), source


@pytest.mark.parametrize("secret", sorted(SECRETS))
@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_compose_config_requires_each_secret(
    tmp_path: Path, secret: str, value: str | None
) -> None:
    env = {k: v for k, v in SECRETS.items() if k != secret}
    if value is not None:
        env[secret] = value
    res = compose_config(tmp_path, **env)
    assert res.returncode != 0, res.stdout
    assert f"set {secret}" in res.stderr, res.stderr
