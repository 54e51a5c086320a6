"""The two test tiers (tests/conftest.py; docs/development.md, "Test tiers"): a test that
starts a process, itself or through a fixture or helper of tests/, is marked e2e at
collection; one that starts a process unmarked fails, so it cannot slow the fast tier
unnoticed."""

from __future__ import annotations

import subprocess as processes  # not spelled as the detector looks for: see the last test
from pathlib import Path

import psycopg
import pytest

from tests import live_service
from tests.conftest import E2E, LONG_MODULES, _module_order, _starts_process


def _pure() -> int:
    return sum(range(3))


def _calls_a_service_helper() -> None:
    with live_service.service_on_new_database(None, "x"):
        pass


def _memexdb_version() -> str:
    code, out = live_service.run_cli(["--version"], live_service.service_env())
    assert code == 0, out
    return out


@pytest.fixture
def version() -> str:
    return _memexdb_version()


def test_helpers_that_start_processes_are_found_through_what_they_call() -> None:
    assert _starts_process(live_service.Service)  # its __init__ calls subprocess.Popen
    assert _starts_process(live_service.run_cli)
    assert _starts_process(_calls_a_service_helper)  # through service_on_new_database
    assert _starts_process(_memexdb_version)
    assert not _starts_process(_pure)
    assert not _starts_process(live_service.free_port)


def test_a_test_using_a_process_fixture_is_marked_e2e(
    request: pytest.FixtureRequest, version: str
) -> None:
    """Runs in the e2e tier only: its fixture starts a process."""
    assert request.node.get_closest_marker(E2E) is not None
    assert version.strip()


def test_a_fast_test_that_starts_a_process_fails() -> None:
    with pytest.raises(AssertionError, match="is not marked e2e"):
        processes.run(["true"], check=True)


class _Item:
    def __init__(self, nodeid: str, e2e: bool = False) -> None:
        self.nodeid = nodeid
        self.e2e = e2e

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == E2E and self.e2e else None


def test_long_modules_then_end_to_end_ones_are_handed_out_first(
    request: pytest.FixtureRequest,
) -> None:
    # xdist's loadfile keeps the collection's module order only with its reordering off
    assert request.config.option.loadscopereorder is False
    items = [
        _Item("tests/test_a.py::one"),
        _Item("tests/test_a.py::two"),
        _Item("tests/test_b.py::one", e2e=True),
        _Item(f"tests/{LONG_MODULES[1]}::x", e2e=True),
        _Item("tests/test_c.py::one"),
        _Item("tests/test_c.py::two"),
        _Item("tests/test_c.py::three"),
        _Item(f"tests/{LONG_MODULES[0]}::y", e2e=True),
        _Item(f"tests/{LONG_MODULES[0]}::z"),
    ]
    ordered = [i.nodeid for i in _module_order(items)]  # type: ignore[arg-type]
    assert ordered == [
        f"tests/{LONG_MODULES[0]}::y",
        f"tests/{LONG_MODULES[0]}::z",
        f"tests/{LONG_MODULES[1]}::x",
        "tests/test_b.py::one",
        "tests/test_c.py::one",
        "tests/test_c.py::two",
        "tests/test_c.py::three",
        "tests/test_a.py::one",
        "tests/test_a.py::two",
    ]
    assert all((Path(__file__).parent / name).is_file() for name in LONG_MODULES)


@pytest.mark.parametrize("run", [1, 2])
def test_rolled_back_conn_leaves_the_module_database_as_it_found_it(
    rolled_back_conn: psycopg.Connection, run: int
) -> None:
    # both runs share the module's database: the second sees nothing of the first
    exists = "select to_regclass('public.tiers_probe') is not null"
    assert rolled_back_conn.execute(exists).fetchone() == (False,), run
    rolled_back_conn.execute("create table tiers_probe (run int)")
    rolled_back_conn.execute("insert into tiers_probe values (%s)", (run,))
