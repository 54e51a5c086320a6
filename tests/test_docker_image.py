"""The service image's recipe (docker/Dockerfile) itself, without a Docker engine (none
runs here): its COPY lines are read and exactly those paths are copied from a clean
checkout (tracked files only) into a scratch image root, the wheel is built there the way
its RUN step builds it (`pip install .` in the WORKDIR, i.e. a wheel of that directory,
installed with its dependencies), into a fresh empty python3.11 venv standing for the
image's interpreter; then the image's ENTRYPOINT runs with the image's ENV and the compose
service's environment and command, against a real PostgreSQL (an empty database of the
test session's embedded server): healthy, a request without a key 401, with the first
start's admin key 201.

Before, the COPY lines left out clients/python/memexdb_client, which the memexdb wheel
packs and the server imports: the image's `memexdb --version` failed with
ModuleNotFoundError. tests/test_docker_stack.py runs the entrypoint from this repository's
venv, where that cannot show.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import stat
import tomllib
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import httpx
import pytest
import yaml

from memexdb import __version__
from memexdb.embedded import EmbeddedPostgres
from tests.clean_install import (
    INSTALL_TIMEOUT,
    NO_COMPILE,
    checkout,
    clean_env,
    fresh_venv,
    run,
    wheel_names,
)
from tests.conftest import db_dsn, janitor
from tests.live_service import REPO, Service, free_port

DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE = REPO / "docker-compose.yml"
# The RUN step's commands; the test emulates the pip one, the others only make the image's
# user and its key volume's folder (meaningless outside a container). A new step fails
# here, so that this test learns what it means.
PIP_INSTALL = "pip install --no-cache-dir ."
OTHER_STEPS = (
    "useradd --system --no-create-home memexdb",
    "install -d -o memexdb -m 700 /var/lib/memexdb",
)


@dataclass
class Recipe:
    """The instructions of docker/Dockerfile that matter outside a container."""

    workdir: PurePosixPath = field(default_factory=lambda: PurePosixPath("/"))
    # (sources in the build context, destination as the image sees it, WORKDIR then)
    copies: list[tuple[list[str], str, PurePosixPath]] = field(default_factory=list)
    runs: list[tuple[str, PurePosixPath]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def read_recipe(text: str) -> Recipe:
    recipe = Recipe()
    lines = re.sub(r"\\\n", " ", text).splitlines()
    for line in (ln.strip() for ln in lines):
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word == "WORKDIR":
            recipe.workdir = recipe.workdir / rest
        elif word == "COPY":
            *sources, dest = shlex.split(rest)
            assert sources and not any(s.startswith("--") for s in sources), line
            recipe.copies.append((sources, dest, recipe.workdir))
        elif word == "RUN":
            recipe.runs.append((rest, recipe.workdir))
        elif word == "ENV":
            recipe.env.update(pair.split("=", 1) for pair in shlex.split(rest))
        elif word == "ENTRYPOINT":
            recipe.entrypoint = json.loads(rest)
        elif word == "CMD":
            recipe.cmd = json.loads(rest)
        else:
            assert word in {"FROM", "USER", "EXPOSE", "HEALTHCHECK"}, line
    return recipe


def image_path(root: Path, dest: str, workdir: PurePosixPath) -> Path:
    """Where a path of the image is in the scratch image root `root`."""
    return root / str(workdir / dest).lstrip("/")


def copy_into_image(context: Path, root: Path, recipe: Recipe) -> None:
    """Each COPY as Docker does it: a directory's contents into the destination; files
    into it when it is a directory (ends with / or has several sources), else as it."""
    for sources, dest, workdir in recipe.copies:
        target = image_path(root, dest, workdir)
        into = dest.endswith("/") or len(sources) > 1
        for source in sources:
            path = context / source
            assert path.exists(), f"COPY {source}: not in a clean checkout"
            if path.is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            else:
                to = target / path.name if into else target
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, to)


def test_recipe_reading() -> None:
    """The parser the recipe test relies on, on the real Dockerfile."""
    recipe = read_recipe(DOCKERFILE.read_text())
    assert recipe.workdir == PurePosixPath("/app")
    assert (["docker/entrypoint.sh"], "/usr/local/bin/memexdb-entrypoint") in [
        (s, d) for s, d, _ in recipe.copies
    ]
    assert recipe.env["MEMEX_HOST"] == "0.0.0.0"
    assert recipe.entrypoint == ["memexdb-entrypoint"] and recipe.cmd == ["serve"]
    (step,) = recipe.runs
    assert step[1] == PurePosixPath("/app")


def test_copy_lines_hold_everything_the_wheel_is_built_from() -> None:
    """Fast and static: every path pyproject.toml's wheel is made of (its packages, forced
    includes, readme and version file) is under a path the Dockerfile copies to /app."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    hatch = project["tool"]["hatch"]
    wheel = hatch["build"]["targets"]["wheel"]
    needed = {
        "pyproject.toml",
        project["project"]["readme"],
        hatch["version"]["path"],
        *wheel["packages"],
        *wheel.get("force-include", {}),
    }
    recipe = read_recipe(DOCKERFILE.read_text())
    copied = []  # the paths of the image the COPY lines make
    for sources, dest, workdir in recipe.copies:
        into = dest.endswith("/") or len(sources) > 1
        for source in sources:
            is_file = (REPO / source).is_file()
            copied.append(workdir / dest / PurePosixPath(source).name if into and is_file
                          else workdir / dest)  # fmt: skip
    app = PurePosixPath("/app")
    missing = sorted(p for p in needed if not any((app / p).is_relative_to(c) for c in copied))
    assert not missing, f"docker/Dockerfile does not copy what the wheel needs: {missing}"


@pytest.mark.timeout(INSTALL_TIMEOUT)
def test_the_image_recipe_installs_and_serves(pg_server: EmbeddedPostgres, tmp_path: Path) -> None:
    recipe = read_recipe(DOCKERFILE.read_text())
    context = checkout(tmp_path / "context")  # compose's build context: the repository
    root = tmp_path / "image"
    copy_into_image(context, root, recipe)

    # RUN: `pip install --no-cache-dir .` in /app, as a wheel of /app installed into the
    # image's (here: an empty) Python. pip's cache is used (it changes no file installed).
    (step, workdir) = recipe.runs[0]
    commands = [c.strip() for c in step.split("&&")]
    assert commands[0] == PIP_INSTALL and tuple(commands[1:]) == OTHER_STEPS, commands
    app = image_path(root, ".", workdir)
    bin_dir = fresh_venv(tmp_path / "python")
    env = clean_env()
    run([bin_dir / "pip", "wheel", "--no-deps", "--wheel-dir", tmp_path / "built", "."], app, env)
    (wheel,) = (tmp_path / "built").glob("memexdb-*.whl")
    run([bin_dir / "pip", "install", NO_COMPILE, wheel], app, env)

    # the image's wheel has the files of a wheel of the whole checkout (the release's, which
    # tests/test_distributions.py builds with `python -m build`: the same build backend)
    full_wheel = [bin_dir / "pip", "wheel", "--no-deps", "--wheel-dir", tmp_path / "full", "."]
    run(full_wheel, context, env)
    (full,) = (tmp_path / "full").glob("memexdb-*.whl")
    assert wheel_names(wheel) == wheel_names(full), sorted(wheel_names(full) ^ wheel_names(wheel))

    # The image's PATH: pip's console scripts, then /usr/local/bin (the entrypoint).
    path = f"{bin_dir}:{image_path(root, 'usr/local/bin', PurePosixPath('/'))}:/usr/bin:/bin"
    entrypoint = shutil.which(recipe.entrypoint[0], path=path)
    assert entrypoint, f"{recipe.entrypoint[0]} is not on the image's PATH"
    assert stat.S_IMODE(Path(entrypoint).stat().st_mode) & 0o111, "not executable"
    version = run([entrypoint, "--version"], app, clean_env(PATH=path))
    assert version.strip() == f"memexdb {__version__}", version

    # The compose service on an empty database of a real PostgreSQL (the test server,
    # which has no pg_cron: PG_CRON=off; tests/test_docker_stack.py runs the pg_cron path).
    name = f"t_{uuid.uuid4().hex[:12]}"
    with janitor(pg_server, name):
        service = yaml.safe_load(COMPOSE.read_text())["services"]["memexdb"]
        compose_env = {k: str(v) for k, v in service["environment"].items()}
        assert compose_env["MEMEX_DATABASE_URL"] == "postgresql://memex@postgres:5432/memex"
        port = free_port()
        key_file = tmp_path / "memexdb-keys" / "admin-key"  # the memexdb-keys volume
        env = clean_env(**recipe.env)
        env.update(compose_env)
        env.update(
            PATH=path,
            MEMEX_DATABASE_URL=db_dsn(pg_server, name),
            PGPASSWORD="unused",  # the test server trusts its unix socket
            MEMEX_METRICS_TOKEN="scrape-token",  # compose's ${...:?} secrets
            MEMEX_PORT=str(port),
            ADMIN_KEY_FILE=str(key_file),
            PG_CRON="off",
            PYTHONUNBUFFERED="1",
        )
        args = [entrypoint, *service.get("command", recipe.cmd)]
        running = Service(args, env, port, tmp_path / "image.log", cwd=app)
        try:
            running.wait_healthy()
            token = key_file.read_text().strip()
            who = {"agent_id": "image", "user_id": "u"}
            with httpx.Client(base_url=running.base_url, timeout=60.0) as http:
                health = http.get("/health")
                assert health.status_code == 200 and health.json()["status"] == "ok", health.text
                assert http.get("/health/ready").status_code == 200  # the HEALTHCHECK's URL
                bare = http.post("/v1/memories", json={**who, "content": "hi"})
                assert bare.status_code == 401, bare.text
                keyed = {"Authorization": f"Bearer {token}"}
                stored = http.post("/v1/memories", json={**who, "content": "hi"}, headers=keyed)
                assert stored.status_code == 201, stored.text
            assert running.stop(signal.SIGTERM) == 0, running.output()[-4000:]
        finally:
            running.close()
