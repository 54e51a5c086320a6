"""The callers' last writes shared by a service's workers (memexdb.replicas.WriteTable):
one file mapped by several processes, one clock for all of them."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from pathlib import Path
from time import monotonic

import pytest

from memexdb.replicas import WRITE_SLOTS, WriteTable, lsn, parse_lsn, token


@pytest.fixture
def table_file() -> object:
    path = WriteTable.create()
    yield path
    path.unlink(missing_ok=True)


def test_a_new_table_is_zeroed_memory_of_its_stated_size(table_file: Path) -> None:
    assert table_file.stat().st_size == WRITE_SLOTS * 8 == 128 * 1024
    if Path("/dev/shm").is_dir():
        assert table_file.parent == Path("/dev/shm")
    table = WriteTable.attach(table_file)
    try:
        assert table.last_write("key:anyone") == 0.0
    finally:
        table.close()


def test_a_write_is_kept_at_its_latest_time() -> None:
    table = WriteTable.private()
    table.wrote("key:a", 10.0)
    table.wrote("key:a", 5.0)  # an earlier end, recorded later: the later one stays
    assert table.last_write("key:a") == 10.0
    table.wrote("key:a", 12.5)
    assert table.last_write("key:a") == 12.5
    assert table.last_write("key:b") in (0.0, 12.5)  # 12.5 only if b's slot is a's


def _write_in_child(path: str, caller: str, out: multiprocessing.Queue[float]) -> None:
    table = WriteTable.attach(path)
    now = monotonic()
    table.wrote(caller, now)
    table.close()
    out.put(now)


def test_another_process_sees_a_write_and_its_clock_is_ours(table_file: Path) -> None:
    """What one worker writes another reads; the time it wrote is on this process's
    monotonic clock (CLOCK_MONOTONIC is one clock for the machine), between this
    process's readings before and after."""
    mine = WriteTable.attach(table_file)
    try:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter, as uvicorn's
        out: multiprocessing.Queue[float] = context.Queue()
        before = monotonic()
        child = context.Process(target=_write_in_child, args=(str(table_file), "key:w", out))
        child.start()
        child.join(60)
        after = monotonic()
        assert child.exitcode == 0
        written = out.get(timeout=5)
        assert before < written < after
        assert mine.last_write("key:w") == written
    finally:
        mine.close()


def test_the_clock_is_one_for_every_process() -> None:
    """time.monotonic in a separate interpreter reads between two readings of ours."""
    before = monotonic()
    run = subprocess.run(
        [sys.executable, "-c", "import time; print(repr(time.monotonic()))"],
        check=True,
        capture_output=True,
        text=True,
    )
    after = monotonic()
    assert before < float(run.stdout) < after


def test_session_tokens_are_wal_positions_in_hexadecimal() -> None:
    assert parse_lsn("0") == 0
    assert parse_lsn("16B374D848") == lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert token(lsn("16/B374D848")) == "16B374D848"
    assert parse_lsn("ffffffffffffffff") == parse_lsn("FFFFFFFFFFFFFFFF") == 2**64 - 1
    for bad in ("", "16/B374D848", "1" * 17, "G", "0x1", " 1", "1\n", "-1", "1_0", "+1"):
        assert parse_lsn(bad) is None, bad
