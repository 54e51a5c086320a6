"""The production stack's moving parts, run for real outside Docker (no engine runs here):

- the Grafana dashboard's PromQL against a live `memexdb serve`: every metric name it
  queries is one the service's /metrics really exports, every label it groups or filters
  by is one those metrics carry; and Debian's Prometheus, started through the stack's
  docker/prometheus/entrypoint.sh with a config that differs from
  docker/prometheus/prometheus.yml only in the target's address, scrapes the service with
  the bearer token and evaluates every dashboard expression;
- the service image's entrypoint (docker/entrypoint.sh) against the PostgreSQL + pg_cron
  server of tests/test_pg_cron.py, prepared with the Postgres image's settings and init
  script (docker/postgres/): it migrates, registers the pg_cron jobs, then becomes
  `memexdb serve`.

Static checks of the same files (compose, Dockerfiles, Prometheus config) are in
tests/test_docker.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest
import yaml
from psycopg.conninfo import make_conninfo

from memexdb import pg_cron
from memexdb.embedded import EmbeddedPostgres
from tests.conftest import drop_database, new_database
from tests.live_service import (
    Service,
    cli_args,
    free_port,
    required,
    run_cli,
    service_env,
    wait_until,
)
from tests.test_pg_cron import (
    DATABASE,
    DEFERS,
    LOG_WAIT,
    cron_jobs,
    pg_cron_server,
    require_pg_cron_bindir,
)

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"
DASHBOARD = DOCKER / "grafana" / "dashboards" / "memexdb.json"
PROMETHEUS_YML = DOCKER / "prometheus" / "prometheus.yml"
PROMETHEUS_ENTRYPOINT = DOCKER / "prometheus" / "entrypoint.sh"
RECORDING_RULES = DOCKER / "prometheus" / "memex_compat.rules.yml"
SERVICE_ENTRYPOINT = DOCKER / "entrypoint.sh"
POSTGRES_DOCKERFILE = DOCKER / "postgres" / "Dockerfile"
INITDB = DOCKER / "postgres" / "initdb"

METRIC = re.compile(r"\bmemex_[a-z0-9_]+\b")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
SELECTOR = re.compile(r"\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)")
SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s")
LABEL = re.compile(r'([a-zA-Z_]\w*)="')
# the histogram bucket bound Prometheus adds to every _bucket series
BUILTIN_LABELS = {"le"}
PROMETHEUS_WAIT = 90.0  # Prometheus' start and a few 1 s scrapes on a loaded 2-core box


# -- the dashboard's queries ------------------------------------------------------------


def dashboard_exprs() -> list[str]:
    """Every PromQL expression of the dashboard's panels."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def query_metrics(expr: str) -> set[str]:
    return set(METRIC.findall(expr))


def query_labels(expr: str) -> set[str]:
    """Label names an expression groups by or matches on (not the $__ variables inside
    range brackets, which are Grafana's)."""
    labels: set[str] = set()
    for group in GROUPING.findall(expr):
        labels |= {name.strip() for name in group.split(",") if name.strip()}
    for selector in SELECTOR.findall(expr):
        labels |= set(MATCHER.findall(selector))
    return labels


@dataclass
class Exported:
    """What a /metrics page offers: sample names (with the names a TYPE line implies, so
    a labelled metric that has no series yet still counts), and the label names seen on
    each sample name's series."""

    names: set[str]
    labels: dict[str, set[str]]


def parse_exposition(text: str) -> Exported:
    names: set[str] = set()
    labels: dict[str, set[str]] = {}
    suffixes = {
        "histogram": ("_bucket", "_sum", "_count"),
        "summary": ("", "_sum", "_count"),
        "counter": ("",),
        "gauge": ("",),
        "untyped": ("",),
    }
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names |= {name + suffix for suffix in suffixes.get(kind, ("",))}
            if kind == "counter" and not name.endswith("_total"):
                names.add(name + "_total")
        elif line and not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            names.add(match[1])
            labels.setdefault(match[1], set()).update(LABEL.findall(match[2] or ""))
    return Exported(names, labels)


def check_dashboard_against(exported: Exported) -> list[str]:
    """Problems of the dashboard's queries against `exported`; empty when it fits."""
    problems = []
    for expr in dashboard_exprs():
        metrics = query_metrics(expr)
        if not metrics:
            problems.append(f"queries no memex_ metric: {expr}")
        for name in sorted(metrics - exported.names):
            problems.append(f"{name} is not exported: {expr}")
        seen = [exported.labels[m] for m in metrics if m in exported.labels]
        if seen:  # a labelled metric with no series yet shows no label names
            known = set().union(*seen) | BUILTIN_LABELS
            for label in sorted(query_labels(expr) - known):
                problems.append(f"label {label} is not on {sorted(metrics)}: {expr}")
    return problems


# -- the memex service's dashboard ---------------------------------------------------------

# Every query of the memex service's Grafana dashboard (ayushagrawal288/memex,
# grafana/dashboards/memex.json at 0978b20; it ships no alert rules), as written there:
# its panels must keep working on memexdb's metrics and docker/prometheus's recording rules.
MEMEX_DASHBOARD = (
    "sum(rate(http_requests_total[1m])) by (handler, status_code)",
    "histogram_quantile(0.50, sum(rate(http_request_duration_highr_seconds_bucket[1m]))"
    " by (le, handler))",
    "histogram_quantile(0.99, sum(rate(http_request_duration_highr_seconds_bucket[1m]))"
    " by (le, handler))",
    "histogram_quantile(0.50, sum(rate(memex_embedding_duration_seconds_bucket[1m]))"
    " by (le, operation))",
    "histogram_quantile(0.99, sum(rate(memex_embedding_duration_seconds_bucket[1m]))"
    " by (le, operation))",
    "sum(rate(memex_memory_operations_total[1m])) by (operation)",
    "memex_db_pool_size - memex_db_pool_idle",
    "memex_db_pool_idle",
    "memex_db_pool_size",
    "increase(memex_summarizer_memories_condensed_total[1h])",
    'increase(memex_summarizer_runs_total{status="ok"}[1h])',
    'increase(memex_summarizer_runs_total{status="error"}[1h])',
    "sum(rate(memex_embedding_errors_total[1m])) by (operation, error_type)",
)
# queries with no series until something fails (no failure happens here)
MEMEX_ONLY_ON_FAILURE = {MEMEX_DASHBOARD[-1], MEMEX_DASHBOARD[-2]}

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "and", "or", "unless", "offset", "inf", "nan"}  # fmt: skip


def promql_metrics(expr: str) -> set[str]:
    """The metric names any PromQL expression reads: its identifiers that are not
    functions (followed by "("), keywords, label names (inside {} or by/without ()),
    strings or durations."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring)\s*\([^)]*\)", " ", expr)
    names = re.findall(r"(?<![\w.])([a-zA-Z_:][\w:]*)\b(?!\s*\()", expr)
    return {n for n in names if n.lower() not in PROMQL_WORDS}


def recording_rules() -> dict[str, str]:
    """Each series name the stack's recording rules make, with its expressions."""
    groups = yaml.safe_load(RECORDING_RULES.read_text())["groups"]
    recorded: dict[str, str] = {}
    for rule in (r for g in groups for r in g["rules"]):
        recorded[rule["record"]] = f"{recorded.get(rule['record'], '')} {rule['expr']}"
    return recorded


def test_promql_metric_extraction() -> None:
    assert promql_metrics(MEMEX_DASHBOARD[0]) == {"http_requests_total"}
    assert promql_metrics(MEMEX_DASHBOARD[6]) == {"memex_db_pool_size", "memex_db_pool_idle"}
    assert promql_metrics(
        'sum without (type) (x_total{function="memex.search"}) + on (job) label_replace('
        'y, "handler", "$1", "route", "(.*)") > bool 0.5'
    ) == {"x_total", "y"}


def test_the_memex_dashboard_reads_only_exported_or_recorded_series(live: Live) -> None:
    exported = parse_exposition(live.metrics)
    recorded = recording_rules()
    queried = set().union(*(promql_metrics(e) for e in MEMEX_DASHBOARD))
    assert len(queried) == 9, queried
    missing = sorted(queried - exported.names - set(recorded))
    assert not missing, f"the memex dashboard queries what nothing provides: {missing}"
    # and every rule is made from what the service exports
    for name, expr in recorded.items():
        inputs = promql_metrics(expr) - set(recorded)
        assert inputs and inputs <= exported.names, (name, sorted(inputs - exported.names))
    # the process's own figures, which the memex service exports too
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes"):
        assert name in exported.labels, f"{name} is not exported"


def test_query_parsing_finds_names_and_labels() -> None:
    """The extraction the live checks rely on, on known input (it must find what is there,
    or those checks pass vacuously)."""
    expr = (
        'sum by (route, le) (rate(memex_http_request_duration_seconds_bucket{status=~"5..",'
        ' method!="GET"}[$__rate_interval])) / memex_up'
    )
    assert query_metrics(expr) == {"memex_http_request_duration_seconds_bucket", "memex_up"}
    assert query_labels(expr) == {"route", "le", "status", "method"}
    page = (
        "# HELP memex_x_seconds x\n# TYPE memex_x_seconds histogram\n"
        'memex_x_seconds_bucket{route="/a",le="0.1"} 1.0\n'
        "# TYPE memex_y_total counter\n# TYPE memex_up gauge\nmemex_up 1.0\n"
    )
    exported = parse_exposition(page)
    assert {"memex_x_seconds_bucket", "memex_x_seconds_count", "memex_y_total", "memex_up"} <= (
        exported.names
    )
    assert exported.labels["memex_x_seconds_bucket"] == {"route", "le"}
    broken = parse_exposition(page.replace("memex_up", "memex_down"))
    problems = check_dashboard_against(broken)
    assert any("memex_up is not exported" in p for p in problems), problems


# -- a live service ---------------------------------------------------------------------


@dataclass
class Live:
    service: Service
    metrics: str


SCRAPE_TOKEN = "scrape-token-for-the-stack-test"


@pytest.fixture(scope="module")
def live(
    pg_server: EmbeddedPostgres, template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """`memexdb serve` on a fresh database as the stack runs it: an API key exists (so
    /metrics needs a credential) and MEMEX_METRICS_TOKEN is set. Yields it with the text of
    its /metrics after a store, a search and a delete."""
    dsn = new_database(pg_server)
    code, out = run_cli(
        ["keys", "create", "--access", "admin", "--name", "stack-test"],
        service_env(MEMEX_DATABASE_URL=dsn),
    )
    assert code == 0, out
    admin = {"Authorization": f"Bearer {out.splitlines()[0].strip()}"}
    port = free_port()
    log = tmp_path_factory.mktemp("stack") / "serve.log"
    env = service_env(MEMEX_DATABASE_URL=dsn, MEMEX_METRICS_TOKEN=SCRAPE_TOKEN)
    service = Service(cli_args("serve", "--port", str(port)), env, port, log)
    try:
        service.wait_healthy()
        who = {"agent_id": "stack", "user_id": "u1"}
        with httpx.Client(base_url=service.base_url, timeout=60.0, headers=admin) as http:
            stored = http.post("/v1/memories", json={**who, "content": "Rex is my dog"})
            assert stored.status_code == 201, stored.text
            found = http.post("/v1/memories/search", json={**who, "query": "my dog"})
            assert found.status_code == 200, found.text
            gone = http.delete(f"/v1/memories/{stored.json()['id']}", params=who)
            assert gone.status_code in (200, 204), gone.text
            # a condense run (two memories make a summary): the memex dashboard's
            # summarizer panels have a run to show
            other = {"agent_id": "stack", "user_id": "u2"}
            for content in ("Rex likes the beach", "Rex is afraid of thunder"):
                r = http.post("/v1/memories", json={**other, "content": content})
                assert r.status_code == 201, r.text
            r = http.post("/v1/admin/dream/run", json={**other, "force": True})
            assert r.status_code == 200, r.text
        with httpx.Client(base_url=service.base_url, timeout=60.0) as http:
            refused = http.get("/metrics")
            assert refused.status_code in (401, 403), refused.text[:500]
            scraped = http.get("/metrics", headers={"Authorization": f"Bearer {SCRAPE_TOKEN}"})
        assert scraped.status_code == 200, scraped.text[:500]
        assert scraped.headers["content-type"].startswith("text/plain"), scraped.headers
        yield Live(service, scraped.text)
    finally:
        service.close()
        drop_database(pg_server, dsn)


def test_dashboard_queries_only_what_the_live_service_exports(live: Live) -> None:
    exported = parse_exposition(live.metrics)
    problems = check_dashboard_against(exported)
    assert not problems, "\n".join(problems)
    # the requests above made series, so the label checks had something to check
    for name in (
        "memex_http_requests_total",
        "memex_http_request_duration_seconds_bucket",
        "memex_sql_call_duration_seconds_bucket",
        "memex_embedding_duration_seconds_bucket",
        "memex_memories_stored_total",
        "memex_up",
    ):
        assert name in exported.labels, f"no series of {name} after a store and a search"
    # and the dashboard shows every memex_ metric the service exports
    queried = set().union(*(query_metrics(e) for e in dashboard_exprs()))
    families = set(re.findall(r"^# TYPE (memex_\w+) ", live.metrics, flags=re.M))
    unshown = {f for f in families if not any(q.startswith(f) for q in queried)}
    assert not unshown, f"exported but on no panel: {sorted(unshown)}"
    print(f"{len(dashboard_exprs())} dashboard queries over {len(queried)} exported names")


def prometheus_binary() -> str:
    message = "Debian's prometheus is not installed (apt-get install prometheus)"
    return required(shutil.which("prometheus"), message)


def _query(http: httpx.Client, expr: str) -> dict[str, Any]:
    r = http.get("/api/v1/query", params={"query": expr})
    body: dict[str, Any] = r.json()
    assert r.status_code == 200 and body["status"] == "success", f"{expr}: {r.text[:500]}"
    return body


def test_prometheus_scrapes_the_service_and_evaluates_the_dashboard(
    live: Live, tmp_path: Path
) -> None:
    """Debian's Prometheus (2.42; the stack pins 3.5) run by the stack's own entrypoint,
    with the stack's config pointed at the live service. The service refuses a scrape
    without a credential, so memex_up in Prometheus shows the token went through."""
    binary = prometheus_binary()
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    (job,) = config["scrape_configs"]
    token_file = tmp_path / "token"
    # the only changes: the target's address, the token file's place, a 1 s interval
    job["static_configs"] = [{"targets": [f"127.0.0.1:{live.service.port}"]}]
    job["authorization"]["credentials_file"] = str(token_file)
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    shutil.copy(RECORDING_RULES, tmp_path / RECORDING_RULES.name)  # rule_files is relative

    port = free_port()
    token = SCRAPE_TOKEN  # what the service takes
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "MEMEX_METRICS_TOKEN": token,
        "PROMETHEUS": binary,
        "PROMETHEUS_TOKEN_FILE": str(token_file),
    }
    args = [
        str(PROMETHEUS_ENTRYPOINT),
        f"--config.file={config_file}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    prometheus = Service(args, env, port, tmp_path / "prometheus.log")
    try:
        with httpx.Client(base_url=prometheus.base_url, timeout=10.0) as http:

            def ready() -> bool:
                assert prometheus.proc.poll() is None, prometheus.output()[-3000:]
                try:
                    return http.get("/-/ready").status_code == 200
                except httpx.TransportError:
                    return False

            assert wait_until(ready, PROMETHEUS_WAIT, interval=0.5), prometheus.output()[-3000:]
            assert token_file.read_text() == token
            assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
            # the entrypoint exec'd Prometheus: the process started is Prometheus itself
            assert psutil.Process(prometheus.proc.pid).name() == "prometheus"

            def scraped() -> list[Any]:
                result: list[Any] = _query(http, "memex_up")["data"]["result"]
                return result

            up = wait_until(scraped, PROMETHEUS_WAIT, interval=0.5)
            assert up and up[0]["value"][1] == "1", up
            # rate() needs two scrapes of a counter: then the first panel has data
            first = "sum by (route) (rate(memex_http_requests_total[1m]))"
            assert wait_until(
                lambda: _query(http, first)["data"]["result"], PROMETHEUS_WAIT, interval=0.5
            ), prometheus.output()[-3000:]
            for expr in dashboard_exprs():
                _query(http, expr.replace("$__rate_interval", "1m"))

            # the memex service's dashboard, through the recording rules: every panel
            # with data but the failures' (two evaluations for rate and increase)
            def memex_panels() -> dict[str, list[Any]]:
                return {e: _query(http, e)["data"]["result"] for e in MEMEX_DASHBOARD}

            def memex_shown() -> dict[str, list[Any]] | None:
                shown = memex_panels()
                empty = {e for e, result in shown.items() if not result}
                return shown if empty <= MEMEX_ONLY_ON_FAILURE else None

            shown = wait_until(memex_shown, PROMETHEUS_WAIT, interval=0.5)
            assert shown, {e: r for e, r in memex_panels().items() if not r}
            latency = shown[MEMEX_DASHBOARD[3]]
            assert {s["metric"].get("operation") for s in latency} <= {"embed", "embed_batch"}
            operations = shown[MEMEX_DASHBOARD[5]]
            assert {s["metric"]["operation"] for s in operations} == {"create", "search", "delete"}
            condensed = _query(http, "memex_summarizer_memories_condensed_total")["data"]
            assert condensed["result"][0]["value"][1] == "2", condensed
        assert prometheus.stop() == 0, prometheus.output()[-3000:]
    finally:
        prometheus.close()


def test_prometheus_entrypoint_requires_the_token(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PROMETHEUS": "/bin/true"}
    env["PROMETHEUS_TOKEN_FILE"] = str(tmp_path / "token")
    res = subprocess.run(
        [str(PROMETHEUS_ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 2, res
    assert "MEMEX_METRICS_TOKEN is not set" in res.stderr, res.stderr
    assert not (tmp_path / "token").exists()


# -- the service image's entrypoint against PostgreSQL with pg_cron -------------------------


def postgres_image_settings() -> dict[str, str]:
    """The `-c name=value` settings of the Postgres image's CMD."""
    text = POSTGRES_DOCKERFILE.read_text()
    (cmd,) = re.findall(r"^CMD (\[.*?\])\s*$", text, flags=re.M | re.S)
    args: list[str] = json.loads(cmd.replace("\\\n", " "))
    assert args[0] == "postgres" and len(args) % 2 == 1, args
    assert set(args[1::2]) == {"-c"}, args
    return dict(arg.split("=", 1) for arg in args[2::2])


def test_postgres_image_settings_are_those_of_the_test_server() -> None:
    """The pg_cron server below runs with the image's settings, but for cron.host: the
    image's socket directory is /var/run/postgresql, the test server's a scratch one."""
    assert postgres_image_settings() == {
        "shared_preload_libraries": "pg_cron",
        "cron.database_name": DATABASE,
        "cron.host": "/var/run/postgresql",
    }


@pytest.fixture(scope="module")
def image_database() -> Iterator[tuple[str, Path]]:
    with fresh_image_database() as made:
        yield made


@contextlib.contextmanager
def fresh_image_database() -> Iterator[tuple[str, Path]]:
    """A PostgreSQL with pg_cron (tests/test_pg_cron.py's server) and database DATABASE,
    made the way the Postgres image's first start makes POSTGRES_DB: created, then the
    scripts of docker/postgres/initdb/ run in it with psql. Yields (DSN, bin dir)."""
    bindir = require_pg_cron_bindir()
    with pg_cron_server(bindir) as server:
        with psycopg.connect(server, autocommit=True) as admin:
            assert admin.execute("show shared_preload_libraries").fetchone() == ("pg_cron",)
            assert admin.execute("show cron.database_name").fetchone() == (DATABASE,)
            admin.execute(f"create database {DATABASE}")
        dsn = make_conninfo(server, dbname=DATABASE)
        for script in sorted(INITDB.iterdir()):
            run_init_script(bindir, dsn, script)
        yield dsn, bindir


def run_init_script(bindir: Path, dsn: str, script: Path) -> None:
    """A docker-entrypoint-initdb.d/ script, as the postgres image runs it (psql)."""
    assert script.suffix == ".sql", script
    res = subprocess.run(
        [str(bindir / "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_postgres_image_init_script_creates_the_extensions(
    image_database: tuple[str, Path],
) -> None:
    """The fixture ran them once, as the image's first start does; again is harmless."""
    dsn, bindir = image_database
    for script in sorted(INITDB.iterdir()):
        run_init_script(bindir, dsn, script)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select extname from pg_extension order by 1").fetchall()
    assert {"pg_cron", "vector"} <= {r[0] for r in rows}, rows


def entrypoint_env(dsn: str, port: int, **extra: str) -> dict[str, str]:
    """The image's environment, outside it: this venv's `memexdb` first on PATH; on
    loopback and without the first start's key unless `extra` says otherwise."""
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    settings = {"MEMEX_HOST": "127.0.0.1", "ADMIN_KEY_FILE": "off", **extra}
    return service_env(PATH=path, MEMEX_DATABASE_URL=dsn, MEMEX_PORT=str(port), **settings)


def image_env() -> dict[str, str]:
    """The ENV lines of the service's Dockerfile."""
    text = (DOCKER / "Dockerfile").read_text()
    (block,) = re.findall(r"^ENV ((?:.*\\\n)*.*)$", text, flags=re.M)
    return dict(pair.split("=", 1) for pair in block.replace("\\\n", " ").split())


def compose_service_env(dsn: str, **secrets: str) -> dict[str, str]:
    """The memexdb service's environment in docker-compose.yml, its ${VAR:?...} secrets
    taken from `secrets`, and its database host (the postgres container) replaced by `dsn`."""
    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["memexdb"]
    env: dict[str, str] = {}
    for name, value in service["environment"].items():
        match = re.fullmatch(r"\$\{(\w+):\?.*\}", str(value))
        env[name] = secrets[match.group(1)] if match else str(value)
    assert env["MEMEX_DATABASE_URL"] == "postgresql://memex@postgres:5432/memex", env
    env["MEMEX_DATABASE_URL"] = dsn
    return env


def test_service_entrypoint_migrates_schedules_and_serves(
    image_database: tuple[str, Path], tmp_path: Path
) -> None:
    dsn, _ = image_database
    assert os.access(SERVICE_ENTRYPOINT, os.X_OK)
    port = free_port()
    env = entrypoint_env(dsn, port)
    service = Service([str(SERVICE_ENTRYPOINT)], env, port, tmp_path / "entrypoint.log")
    try:
        service.wait_healthy()
        out = service.output()
        assert "migrated to revision" in out and "runs:" in out, out
        jobs = {job.jobname: job for job in cron_jobs(dsn)}
        # every job registered but dreaming over files, which is opt-in (no LLM in this
        # environment: see docs/operations.md, "Scheduling with pg_cron", for what changes
        # with one)
        expected = set(pg_cron.NAMES) - {pg_cron.DREAM.name}
        assert set(jobs) == expected and all(j.active for j in jobs.values()), jobs
        assert f"skipped {pg_cron.DREAM.name}: MEMEX_DREAM_ENABLED is not true" in out, out
        # the service leaves the job to pg_cron, as the stack means it to
        assert wait_until(lambda: DEFERS in service.output(), LOG_WAIT), service.output()
        # exec: the process started is memexdb now, not a shell waiting for it
        cmdline = " ".join(psutil.Process(service.proc.pid).cmdline())
        assert "memexdb" in cmdline and "serve" in cmdline, cmdline
        with httpx.Client(base_url=service.base_url, timeout=30.0) as http:
            r = http.post("/v1/memories", json={"agent_id": "a", "user_id": "u", "content": "hi"})
            assert r.status_code == 201, r.text
            # the stack condenses by default, by pg_cron; nobody dreams over files
            config = http.get("/v1/admin/dream/config").json()
            assert (config["condense"], config["dream"]) == ("pg_cron", "not scheduled"), config
        assert service.stop(signal.SIGTERM) == 0, service.output()
    finally:
        service.close()

    # Again on the migrated database: the same jobs, one per name.
    code, out = run_entrypoint(dsn, "schedule", "--list")
    assert code == 0 and "memex-maintenance" in out, out
    assert {job.jobname for job in cron_jobs(dsn)} == set(jobs)


def run_entrypoint(dsn: str, *args: str, **extra: str) -> tuple[int, str]:
    res = subprocess.run(
        [str(SERVICE_ENTRYPOINT), *args],
        env=entrypoint_env(dsn, free_port(), **extra),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return res.returncode, res.stdout + res.stderr


def test_service_entrypoint_without_pg_cron_stops_with_the_setup_steps(
    dsn: str, tmp_path: Path
) -> None:
    """The embedded PostgreSQL has no pg_cron: `serve` stops with exit code 2 and the
    steps (the container's restart policy tries again); with PG_CRON=off it serves (the
    service runs the jobs itself), and another command runs as is."""
    code, out = run_entrypoint(dsn)
    assert code == 2, out
    assert "pg_cron is not installed" in out and "Traceback" not in out, out
    code, out = run_entrypoint(dsn, "migrate", PG_CRON="off")
    assert code == 0 and "migrated to revision" in out, out
    port = free_port()
    env = entrypoint_env(dsn, port, PG_CRON="off")
    service = Service([str(SERVICE_ENTRYPOINT)], env, port, tmp_path / "entrypoint.log")
    try:
        service.wait_healthy()
        assert "pg_cron is not installed" not in service.output(), service.output()
        assert service.stop() == 0, service.output()
    finally:
        service.close()


def test_compose_stack_first_start_on_a_fresh_volume(tmp_path: Path) -> None:
    """The stack's memexdb service on a fresh database, outside Docker (no Docker engine
    runs here): the image's entrypoint with the image's ENV (MEMEX_HOST=0.0.0.0) and the
    compose file's environment and command; only the port, the database's address and the
    key file's folder (the memexdb-keys volume) differ. Before, `serve` refused 0.0.0.0
    without a key and the stack restarted forever; now the first start makes the
    operator's admin key, serves, and refuses requests without it."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["memexdb"]
    assert "memexdb-keys:/var/lib/memexdb" in compose["volumes"]
    image = image_env()
    assert image["MEMEX_HOST"] == "0.0.0.0"
    key_file = tmp_path / "volume" / "admin-key"
    port = free_port()
    with fresh_image_database() as (dsn, _):
        compose_env = compose_service_env(dsn, MEMEX_DB_PASSWORD="x", MEMEX_METRICS_TOKEN="s")
        env = {
            **entrypoint_env(dsn, port),
            **image,
            **compose_env,
            "MEMEX_PORT": str(port),
            "ADMIN_KEY_FILE": str(key_file),
        }
        args = [str(SERVICE_ENTRYPOINT), *compose["command"]]
        service = Service(args, env, port, tmp_path / "entrypoint.log")
        try:
            service.wait_healthy()
            token = key_file.read_text().strip()
            assert re.fullmatch(r"mxk_[0-9a-f]{12}_[0-9a-f]{64}", token), token
            assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
            assert token not in service.output()  # never in the logs
            who = {"agent_id": "a", "user_id": "u"}
            with httpx.Client(base_url=service.base_url, timeout=30.0) as http:
                assert http.get("/health").status_code == 200
                assert http.get("/health/ready").status_code == 200  # compose's healthcheck
                bare = http.post("/v1/memories", json={**who, "content": "hi"})
                assert bare.status_code == 401, bare.text
                keyed = {"Authorization": f"Bearer {token}"}
                r = http.post("/v1/memories", json={**who, "content": "hi"}, headers=keyed)
                assert r.status_code == 201, r.text
            assert service.stop(signal.SIGTERM) == 0, service.output()
        finally:
            service.close()
        # a restart keeps the keys (and the file) as they are
        code, out = run_cli(["keys", "bootstrap", "--token-file", str(key_file)], env)
        assert code == 0 and "has API keys already" in out, out
        assert key_file.read_text().strip() == token
