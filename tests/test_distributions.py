"""The two Python distributions as a release makes them (docs/development.md,
"Releasing"): `python -m build` from a clean checkout (tracked files only) gives each an
sdist and a wheel that pass `twine check --strict`, and each installs alone into an empty
python3.11 venv (the sdist too): memexdb's `memexdb --version` and migration work from
what it installed, memexdb-client imports without memexdb. One version per package,
defined once, and the three packages (with @memexdb/client) released under one version,
which is the CHANGELOG's newest release. (The memexdb wheel's own install is
tests/test_docker_image.py's, as the image's recipe builds it.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tomllib
import uuid
from pathlib import Path

import memexdb_client
import pytest

from memexdb import __version__
from memexdb.embedded import EmbeddedPostgres
from tests.clean_install import (
    INSTALL_TIMEOUT,
    NO_COMPILE,
    build_dists,
    checkout,
    clean_env,
    fresh_venv,
    run,
    wheel_names,
)
from tests.conftest import db_dsn, janitor
from tests.live_service import REPO

CLIENT = REPO / "clients" / "python"
NPM_PACKAGE = REPO / "clients" / "typescript"
CHANGELOG = REPO / "CHANGELOG.md"
RELEASE = re.compile(r"^## (\d+\.\d+\.\d+) - (\d{4}-\d{2}-\d{2})$")


# -- one version ------------------------------------------------------------------------


def test_one_version_per_package_the_same_for_all_three() -> None:
    """memexdb's version is `memexdb.__version__`, memexdb-client's is
    `memexdb_client.__version__`, @memexdb/client's is package.json's (package-lock.json
    mirrors it, as npm writes it); the pyproject files read theirs (hatch), none repeats
    it. Released together, they are equal."""
    for pyproject, path in ((REPO, "memexdb/__init__.py"), (CLIENT, "memexdb_client/__init__.py")):
        config = tomllib.loads((pyproject / "pyproject.toml").read_text())
        assert "version" not in config["project"], f"{pyproject}: a second version"
        assert config["project"]["dynamic"] == ["version"]
        assert config["tool"]["hatch"]["version"]["path"] == path
        assigned = re.findall(r'^__version__ = "(.+)"$', (pyproject / path).read_text(), re.M)
        assert len(assigned) == 1, (path, assigned)
    package = json.loads((NPM_PACKAGE / "package.json").read_text())
    lock = json.loads((NPM_PACKAGE / "package-lock.json").read_text())
    assert lock["version"] == lock["packages"][""]["version"] == package["version"]
    versions = {
        "memexdb": __version__,
        "memexdb-client": memexdb_client.__version__,
        "@memexdb/client": package["version"],
    }
    assert set(versions.values()) == {__version__}, versions


def test_changelog_has_unreleased_then_released_sections() -> None:
    """`## Unreleased` on top, then one `## X.Y.Z - YYYY-MM-DD` section per release, newest
    first; the newest is the packages' version (a release sets both)."""
    headings = re.findall(r"^## .*$", CHANGELOG.read_text(), flags=re.M)
    assert headings[0] == "## Unreleased", headings[:3]
    releases = [RELEASE.match(h) for h in headings[1:]]
    unparsed = [h for h, m in zip(headings[1:], releases, strict=True) if not m]
    assert releases and not unparsed, unparsed
    versions = [tuple(map(int, m[1].split("."))) for m in releases if m]
    dates = [m[2] for m in releases if m]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert dates == sorted(dates, reverse=True), dates
    newest = releases[0]
    assert newest and newest[1] == __version__, (newest, __version__)


def test_release_checklist_names_the_commands() -> None:
    """docs/development.md's release section has the commands this module runs."""
    text = (REPO / "docs" / "development.md").read_text()
    section = text[text.index("## Releasing") :]
    for command in (
        ".venv/bin/python -m build",
        ".venv/bin/twine check --strict",
        "npm pack",
        "npm publish --dry-run",
        "git tag",
        ".venv/bin/twine upload",
        "npm publish",
    ):
        assert command in section, command


# -- the distributions ------------------------------------------------------------------


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """sdist and wheel of both distributions, built from a clean checkout:
    {"memexdb": {"sdist": ..., "wheel": ...}, "memexdb-client": {...}}."""
    source = checkout(tmp_path_factory.mktemp("checkout"))
    out = tmp_path_factory.mktemp("dist")
    built: dict[str, dict[str, Path]] = {}
    for name, project in (("memexdb", source), ("memexdb-client", source / "clients/python")):
        files = build_dists(project, out / name)
        stem = f"{name.replace('-', '_')}-{__version__}"
        assert [f.name for f in files] == [f"{stem}-py3-none-any.whl", f"{stem}.tar.gz"], files
        built[name] = {"wheel": files[0], "sdist": files[1]}
    return built


def test_distributions_pass_twine_check(dists: dict[str, dict[str, Path]]) -> None:
    files = [f for d in dists.values() for f in d.values()]
    output = run([sys.executable, "-m", "twine", "check", "--strict", *files], REPO, clean_env())
    assert output.count("PASSED") == 4, output


def test_distributions_hold_what_they_need_and_no_more(
    dists: dict[str, dict[str, Path]],
) -> None:
    server = wheel_names(dists["memexdb"]["wheel"])
    for needed in ("memexdb/cli.py", "memexdb_client/client.py", "memexdb/_sql/manifest.txt",
                   "memexdb/_alembic/env.py", "memexdb_client/py.typed"):  # fmt: skip
        assert needed in server, needed
    client = wheel_names(dists["memexdb-client"]["wheel"])
    assert {n.split("/")[0] for n in client} == {"memexdb_client"}, sorted(client)
    # the client's wheel has the same module files as the one memexdb packs
    assert client == {n for n in server if n.startswith("memexdb_client/")}
    for name, allowed in (
        ("memexdb", {"memexdb", "clients", "sql", "alembic", "README.md", "CHANGELOG.md",
                     "LICENSE", "pyproject.toml", "PKG-INFO", ".gitignore"}),
        ("memexdb-client", {"memexdb_client", "README.md", "LICENSE", "pyproject.toml",
                            "PKG-INFO", ".gitignore"}),
    ):  # fmt: skip
        with tarfile.open(dists[name]["sdist"]) as tar:
            top = {n.split("/")[1] for n in tar.getnames() if n.count("/")}
        assert top <= allowed and "LICENSE" in top, (name, sorted(top - allowed))


@pytest.mark.timeout(INSTALL_TIMEOUT)
def test_memexdb_client_installs_alone(dists: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    """The wheel and the sdist, each into its own empty venv: the client imports, has the
    version, and brought no memexdb along."""
    probe = (
        "import importlib.util, memexdb_client; "
        "from memexdb_client import MemexClient, AsyncMemexClient, NotFound; "
        "print(memexdb_client.__version__, importlib.util.find_spec('memexdb') is None)"
    )
    for kind, dist in dists["memexdb-client"].items():
        bin_dir = fresh_venv(tmp_path / kind)
        run([bin_dir / "pip", "install", NO_COMPILE, dist], tmp_path, clean_env())
        output = run([bin_dir / "python", "-c", probe], tmp_path, clean_env())
        assert output.split() == [__version__, "True"], (kind, output)


@pytest.mark.timeout(INSTALL_TIMEOUT)
def test_memexdb_sdist_installs_alone_and_migrates(
    dists: dict[str, dict[str, Path]], pg_server: EmbeddedPostgres, tmp_path: Path
) -> None:
    """The sdist (built into a wheel by pip, as a user without the wheel gets it) in an
    empty venv: `memexdb --version`, and `memexdb migrate` of an empty database with the
    SQL and revisions it installed."""
    bin_dir = fresh_venv(tmp_path / "venv")
    env = clean_env()
    run([bin_dir / "pip", "install", NO_COMPILE, dists["memexdb"]["sdist"]], tmp_path, env)
    assert run([bin_dir / "memexdb", "--version"], tmp_path, env).strip() == (
        f"memexdb {__version__}"
    )
    name = f"t_{uuid.uuid4().hex[:12]}"
    with janitor(pg_server, name):
        migrate = [bin_dir / "memexdb", "migrate"]
        env = clean_env(MEMEX_DATABASE_URL=db_dsn(pg_server, name))
        output = run(migrate, tmp_path, env)
        assert "migrated to revision" in output, output
        where = subprocess.run(
            [bin_dir / "python", "-c", "import memexdb; print(memexdb.__file__)"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert where.startswith(str(tmp_path / "venv")), where  # not this checkout's
