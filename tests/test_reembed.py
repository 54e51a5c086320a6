"""`memexdb reembed` on a database whose memories carry another model's vectors: every one
is embedded again with the configured model (in full when long), with a progress bar; a
run killed part-way resumes; an embedder of another dimension is refused at start."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from uuid import UUID

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from memexdb.embedding import Embedder
from memexdb.embedding.long_text import embed_in_full
from memexdb.embeddings.models import DEFAULT_REEMBED_BATCH, REEMBED_BATCH_MAX
from tests.json_http import JsonHandler, serving
from tests.live_service import REPO, cli_args, run_cli, service_env, wait_until
from tests.sqlapi import half, unit

OLD = "old-model"
OLD_VECTOR = unit((3, 1.0))
LONG = " ".join(
    f"Chapter {n}: the expedition crossed the glacier, set up camp below the ridge and"
    " waited two days for the storm to pass before the final climb." * 2
    for n in range(15)
)


def seed(conn: psycopg.Connection, count: int, agent: str = "a") -> list[UUID]:
    """`count` memories with OLD's vectors (one of them long, one archived, one a file)."""
    register_vector(conn)
    ids = []
    with conn.transaction():
        for n in range(count):
            content = (
                LONG if n == 0 else f"Fact {n}: the meeting room on floor {n % 9} has {n} chairs"
            )
            row = conn.execute(
                "select id from memex.store(%s, 'u', %s, %s, %s)",
                (agent, content, OLD_VECTOR, OLD),
            ).fetchone()
            assert row is not None
            ids.append(row[0])
        conn.execute("update memex.memories set archived_at = now() where id = %s", (ids[1],))
        row = conn.execute(
            "select memory_id"
            " from memex.write_file(%s, 'u', 'user/profile.md', '# Profile', %s, %s)",
            (agent, OLD_VECTOR, OLD),
        ).fetchone()
        assert row is not None
        ids.append(row[0])
    return ids


def by_model(conn: psycopg.Connection) -> dict[str, int]:
    rows = conn.execute("select embedding_model, count(*) from memex.memories group by 1")
    return {r[0]: int(r[1]) for r in rows}


def test_every_memory_of_another_model_is_embedded_again_with_a_progress_bar(
    dsn: str, conn: psycopg.Connection, embedder: Embedder
) -> None:
    ids = seed(conn, 30)
    current_vector = unit((5, 1.0))
    current = conn.execute(
        "select id from memex.store('a', 'u', 'already current', %s, %s)",
        (current_vector, embedder.model_id),
    ).fetchone()
    assert current is not None
    env = service_env(MEMEX_DATABASE_URL=dsn)
    code, out = run_cli(["reembed", "--batch-size", "7"], env)
    assert code == 0, out
    print(out)
    assert f"31 memories have vectors of another model than {embedder.model_id} ({OLD}: 31)" in out
    assert re.search(r"100%\|[^\n\r]*\| 31/31", out), out  # tqdm's bar, on stderr
    assert f"embedded 31 memories again with {embedder.model_id}" in out
    assert by_model(conn) == {embedder.model_id: 32}
    register_vector(conn)
    stored = {
        r[0]: (r[1], r[2].to_numpy().astype(np.float32))
        for r in conn.execute("select id, content, embedding from memex.memories")
    }
    expected = embed_in_full(embedder, [stored[i][0] for i in ids])
    for memory_id, vector in zip(ids, expected, strict=True):
        assert np.array_equal(stored[memory_id][1], half(vector))
    assert not np.array_equal(stored[ids[0]][1], half(embedder.embed([LONG])[0]))  # in full
    assert np.array_equal(stored[current[0]][1], half(current_vector))  # untouched

    code, out = run_cli(["reembed", "-q"], env)
    assert code == 0 and "0 memories have vectors of another model" in out, out
    assert "100%" not in out  # -q: no bar


def test_a_run_killed_part_way_resumes_where_it_was(
    dsn: str, conn: psycopg.Connection, embedder: Embedder, tmp_path: Path
) -> None:
    total = len(seed(conn, 400))
    env = service_env(MEMEX_DATABASE_URL=dsn)
    log = tmp_path / "first.log"
    with log.open("wb") as out:
        first = subprocess.Popen(
            cli_args("reembed", "--batch-size", "8"),
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        started = wait_until(lambda: by_model(conn).get(embedder.model_id, 0) >= 16, 180, 0.02)
        assert started, log.read_text()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(timeout=30)
    done = by_model(conn).get(embedder.model_id, 0)
    print(f"killed after {done} of {total}")
    assert 16 <= done < total, "it finished before the kill: seed more memories"
    code, out = run_cli(["reembed", "--batch-size", "8"], env)
    assert code == 0, out
    assert f"{total - done} memories have vectors of another model" in out, out
    assert f"embedded {total - done} memories again" in out, out
    assert by_model(conn) == {embedder.model_id: total}


class ThreeDims(JsonHandler):
    """An OpenAI-compatible embeddings server whose model makes 3-d vectors."""

    def do_POST(self) -> None:
        texts = self.read_json()["input"]
        data = [{"index": i, "embedding": [0.6, 0.8, 0.0]} for i in range(len(texts))]
        self.send_json(200, {"data": data})


@pytest.fixture
def three_d_server() -> Iterator[str]:
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), ThreeDims)) as httpd:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def test_an_embedder_of_another_dimension_is_refused_at_start(
    dsn: str, conn: psycopg.Connection, three_d_server: str
) -> None:
    seed(conn, 3)
    env = service_env(
        MEMEX_DATABASE_URL=dsn, MEMEX_EMBEDDER="openai:three-d", MEMEX_EMBEDDING_URL=three_d_server
    )
    code, out = run_cli(["reembed"], env)
    assert code == 2, out
    assert "makes 3-d vectors but memex.memories.embedding is halfvec(384)" in out, out
    assert "Traceback" not in out
    assert by_model(conn) == {OLD: 4}


def test_the_page_size_is_defined_once(conn: psycopg.Connection) -> None:
    row = conn.execute(
        "select pg_get_function_arguments('memex.stale_embeddings'::regproc)"
    ).fetchone()
    assert row is not None and f"p_limit integer DEFAULT {DEFAULT_REEMBED_BATCH}" in row[0]
    for limit, ok in ((1, True), (REEMBED_BATCH_MAX, True), (0, False)):
        args = ("m", None, limit)
        if ok:
            conn.execute("select * from memex.stale_embeddings(%s, %s, %s)", args)
        else:
            with pytest.raises(psycopg.Error) as info:
                conn.execute("select * from memex.stale_embeddings(%s, %s, %s)", args)
            assert info.value.diag.column_name == "limit"
    with pytest.raises(psycopg.Error) as info:
        conn.execute(
            "select * from memex.stale_embeddings('m', null, %s)", (REEMBED_BATCH_MAX + 1,)
        )
    assert info.value.diag.column_name == "limit"
