"""The bundled MiniLM in Node (clients/minilm, `@memexdb/minilm`) against the Python
package: the same model bytes, the same vectors (cosine >= 0.999 on
tests/minilm_reference.json's texts), long texts chunked the same way, and direct mode
(`@memexdb/client/direct` with the model given) storing memories that rank with those the
Python package stores, with the same scores."""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import shutil
import tarfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
import pytest

from memexdb.client import Memex
from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import local_minilm
from memexdb.embedding.long_text import embed_in_full, plan, window_of
from memexdb.embedding.protocol import Embedder
from tests.conftest import drop_database, new_database
from tests.live_service import REPO, required
from tests.node_packages import pg_version
from tests.sqlapi import bound_login_role
from tests.test_typescript_client import PACKAGE as CLIENT
from tests.test_typescript_client import libpq_url, npm_env, run

pytestmark = pytest.mark.e2e

MINILM = REPO / "clients" / "minilm"
WHEN = datetime(2026, 11, 1, 9, 30, tzinfo=UTC)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
QUERY = "where does Alice keep her houseplants"


def node_env(**extra: str) -> dict[str, str]:
    # onnxruntime-node's postinstall would fetch GPU libraries from outside npm
    return npm_env(ONNXRUNTIME_NODE_INSTALL="skip", **extra)


@pytest.fixture(scope="module")
def node() -> str:
    required(shutil.which("npm"), "npm is not installed")
    return required(shutil.which("node"), "node is not installed")


@pytest.fixture(scope="module")
def built(node: str, node_tarballs: dict[str, Path]) -> Path:
    """clients/minilm built (tsc, and model/ from the Python package's verified file) and
    the TypeScript client's dist/ (its direct mode): what packing them (the session's
    `node_tarballs`, whose `prepack` builds both) leaves in the working tree."""
    return MINILM


def node_suite(node: str, suite: str, env: dict[str, str]) -> str:
    output = run([node, "--test", suite], MINILM, node_env(**env))
    assert re.search(r"^# fail 0$", output, flags=re.M), output[-8000:]
    assert re.search(r"^# skipped 0$", output, flags=re.M), output[-8000:]
    return output


def long_texts() -> list[str]:
    """Texts of one to several windows, with sentence ends, line breaks, accents, CJK,
    emoji, and words longer than a window."""
    rng = random.Random(7)
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "while",
        "Alice,",
        "Bob",
        "and",
        "Carol",
        "discuss",
        "Lisbon's",
        "café",
        "prices;",
        "naïve",
        "résumé",
        "東京",
        "emoji",
        "🙂",
        "co-operate",
        "e-mail",
        "U.S.A.",
        "3.14",
        "Zürich\u00a0straße",
        "½",
        "x\u200by",
    ]
    texts = []
    for n in (300, 700, 1500):
        parts = []
        for _ in range(n):
            word = rng.choice(words)
            word += "." if rng.random() < 0.08 else ""
            word += "\n" if rng.random() < 0.02 else ""
            parts.append(word)
        texts.append(" ".join(parts))
    texts.append("x" * 3000)
    texts.append("supercalifragilistic" * 80 + " and then some more words here")
    return texts


def test_package_constants_are_the_python_packages() -> None:
    source = (MINILM / "src" / "index.ts").read_text()
    assert f'MODEL_ID = "{local_minilm.MODEL_ID}"' in source
    assert f'MODEL_SHA256 = "{local_minilm.MODEL_SHA256}"' in source
    assert f"MAX_TOKENS = {local_minilm.MAX_TOKENS};" in source
    assert local_minilm.MODEL_SHA256 in (MINILM / "scripts" / "build-model.mjs").read_text()


def test_vectors_and_chunks_match_python(
    built: Path, node: str, embedder: Embedder, tmp_path: Path
) -> None:
    """node --test test/minilm.test.mjs: the reference texts (cosine >= 0.999), and long
    texts cut into the same chunks and embedded to the same vectors as here."""
    texts = long_texts()
    cut = plan(texts, window_of(embedder))
    assert any(len(counts) > 3 for counts in cut.tokens)  # several windows
    expected = {
        "texts": texts,
        "pieces": cut.pieces,
        "tokens": cut.tokens,
        "vectors": embed_in_full(embedder, texts).tolist(),
    }
    (tmp_path / "long.json").write_text(json.dumps(expected))
    node_suite(node, "test/minilm.test.mjs", {"MEMEX_MINILM_LONG": str(tmp_path / "long.json")})


@pytest.fixture
def database(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    dsn = new_database(pg_server)
    try:
        yield dsn
    finally:
        drop_database(pg_server, dsn)


def test_node_and_python_memories_rank_together(
    built: Path, node: str, database: str, embedder: Embedder, tmp_path: Path
) -> None:
    """Python stores one memory, Node's direct mode (as a role bound to the tenant, with
    the model in process) stores another: Node's hybrid search finds both, and Python's
    search of the same query as of the same moment gives both the same scores."""
    agent, user = "rank-agent", f"u-{uuid.uuid4().hex[:8]}"
    with Memex.connect(database, embedder=embedder) as memex:
        python = memex.store(
            agent, user, "Alice keeps her houseplants on the kitchen windowsill", created_at=WHEN
        )
        node_memory = {
            "id": str(uuid.uuid4()),
            "content": "Alice waters the ferns on her balcony every Sunday",
            "created_at": WHEN.isoformat(),
        }
        with contextlib.ExitStack() as stack:
            role = stack.enter_context(bound_login_role(database, agent, [user]))
            out = tmp_path / "rank.json"
            env = {
                "MEMEX_DIRECT_URL": libpq_url(role),
                "MEMEX_RANK_AGENT": agent,
                "MEMEX_RANK_USER": user,
                "MEMEX_RANK_QUERY": QUERY,
                "MEMEX_RANK_NOW": NOW.isoformat(),
                "MEMEX_NODE_MEMORY": json.dumps(node_memory),
                "MEMEX_PYTHON_MEMORY_ID": str(python.id),
                "MEMEX_RANK_OUT": str(out),
            }
            node_suite(node, "test/direct.test.mjs", env)
        from_node = json.loads(out.read_text())
        for mode in ("hybrid", "vector"):
            hits = memex.search(agent, user, QUERY, now=NOW, top_k=10, mode=mode)
            mine = {str(h.id): h for h in hits}
            theirs = {h["id"]: h for h in from_node[mode]}
            for memory_id in (str(python.id), node_memory["id"]):
                assert memory_id in mine and memory_id in theirs, (mode, memory_id)
                for field in ("similarity", "score"):
                    ours, node_value = getattr(mine[memory_id], field), theirs[memory_id][field]
                    assert ours == pytest.approx(node_value, abs=1e-4), (mode, field, memory_id)
            # the same order for the memories both rank
            common = [i for i in mine if i in theirs]
            assert common == [h["id"] for h in from_node[mode] if h["id"] in mine], mode

    # what Node stored is the vector Python makes of that content, under the same model
    with psycopg.connect(database) as conn:
        row = conn.execute(
            "select embedding::text, embedding_model from memex.memories where id = %s",
            (node_memory["id"],),
        ).fetchone()
    assert row is not None and row[1] == local_minilm.MODEL_ID
    stored = np.array(json.loads(row[0]), dtype=np.float64)
    expected = embedder.embed([node_memory["content"]])[0].astype(np.float64)
    assert float(stored @ expected) >= 0.999


def docs_example() -> str:
    """docs/clients.md's example of direct mode with @memexdb/minilm (the same in the
    TypeScript client's README)."""
    page = (REPO / "docs" / "clients.md").read_text()
    blocks = [b for b in re.findall(r"```ts\n(.*?)```", page, flags=re.S) if "@memexdb/minilm" in b]
    assert len(blocks) == 1, "docs/clients.md has one example with @memexdb/minilm"
    assert blocks[0] in (CLIENT / "README.md").read_text(), "the client's README shows it too"
    return str(blocks[0])


def disk_usage(path: Path) -> int:
    """Bytes on disk under `path`, as `du` counts them (allocated blocks)."""
    return sum(p.lstat().st_blocks * 512 for p in path.rglob("*")) + path.lstat().st_blocks * 512


def stated_install_mb() -> int:
    found = re.search(
        r"`du -sh node_modules`\): (\d+) MB", (REPO / "docs" / "clients.md").read_text()
    )
    assert found, "docs/clients.md states the install size"
    return int(found.group(1))


def test_packed_tarballs_from_an_empty_project(
    node_tarballs: dict[str, Path], node: str, database: str, tmp_path: Path
) -> None:
    """Both packages as npm packs them: the model and its licences in @memexdb/minilm's
    tarball; installed into an empty project (with `pg`), docs/clients.md's example runs
    against a bound role, and the install size docs/clients.md states is what it takes."""
    npm = required(shutil.which("npm"), "npm is not installed")
    minilm_tarball = node_tarballs["@memexdb/minilm"]
    with tarfile.open(minilm_tarball) as tar:
        names = set(tar.getnames())
        onnx = tar.extractfile("package/model/model.onnx")
        assert onnx is not None
        assert hashlib.sha256(onnx.read()).hexdigest() == local_minilm.MODEL_SHA256
    for name in ("LICENSE", "NOTICE", "README.md", "dist/index.js", "dist/index.d.ts"):
        assert f"package/{name}" in names, name
    for name in (*local_minilm.TOKENIZER_FILES, "LICENSE", "NOTICE", "SHA256SUMS"):
        assert f"package/model/{name}" in names, name
    assert not any(n.startswith("package/src/") for n in names)

    project = tmp_path / "app"
    project.mkdir()
    run([npm, "init", "-y", "--loglevel=error"], project, node_env())
    tarballs = [str(minilm_tarball), str(node_tarballs["@memexdb/client"])]
    install = [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"]
    run([*install, *tarballs, f"pg@{pg_version()}"], project, node_env())
    (project / "example.mjs").write_text(docs_example())
    with bound_login_role(database, "direct-agent", ["alice"]) as role:
        output = run([node, "example.mjs"], project, node_env(MEMEX_DIRECT_URL=libpq_url(role)))
    assert output == "hybrid Alice waters the ferns on Sundays\n", output

    measured_mb = disk_usage(project / "node_modules") / 2**20
    assert abs(measured_mb - stated_install_mb()) <= 0.1 * stated_install_mb(), measured_mb
