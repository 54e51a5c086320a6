"""Tests of memexdb.embedding against the real bundled model and a real local HTTP server."""

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memexdb.embedding import (
    BatchingEmbedder,
    Embedder,
    EmbeddingError,
    EmbeddingServiceError,
    FastEmbedModel,
    LocalMiniLM,
    ModelIntegrityError,
    OpenAIEmbeddings,
    Vectors,
    build_embedder,
    local_minilm,
)
from memexdb.embedding.cache import EmbeddingCache
from tests.json_http import JsonHandler, serving

PROJECT_ROOT = Path(local_minilm.__file__).parents[2]  # for subprocesses
SENTENCES = [f"Memory number {i} is about topic {i % 7} and item {i * 13}" for i in range(70)]


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    return build_embedder("minilm")


class CountingEmbedder:
    """A real embedder that records the size and thread of every model call."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.batch_sizes: list[int] = []
        self.thread_ids: set[int] = set()
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.batch_sizes.append(len(texts))
            self.thread_ids.add(threading.get_ident())
        return self.inner.embed(texts)


class BrokenEmbedder:
    """An embedder whose model call always fails, as a crashed runtime would."""

    model_id = "broken"
    dim = 384

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        raise EmbeddingError(f"model exploded on {len(texts)} texts")


class SlowEmbedder:
    """The real model behind a slower runtime, to keep a batch running for a while."""

    def __init__(self, inner: Embedder, delay_s: float) -> None:
        self.inner = inner
        self.delay_s = delay_s
        self.model_id = inner.model_id
        self.dim = inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        time.sleep(self.delay_s)
        return self.inner.embed(texts)


# --- the bundled MiniLM ---------------------------------------------------------------


def test_minilm_gives_unit_float32_vectors(minilm: Embedder) -> None:
    vectors = minilm.embed(["The cat sat on the mat", "Quarterly revenue grew 5%"])
    assert isinstance(minilm, Embedder)
    assert (minilm.model_id, minilm.dim) == ("all-MiniLM-L6-v2-int8", 384)
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_minilm_similarity_follows_meaning(minilm: Embedder) -> None:
    cat, kitten, revenue = minilm.embed(
        ["The cat sat on the mat", "A kitten is resting on a rug", "Quarterly revenue grew 5%"]
    )
    assert float(cat @ kitten) > 0.5
    assert float(cat @ kitten) > float(cat @ revenue) + 0.3
    assert float(kitten @ revenue) < 0.2


def test_minilm_vectors_do_not_depend_on_batching(minilm: Embedder) -> None:
    texts = ["hi", "a much longer sentence about databases " * 8, "Quarterly revenue grew 5%"]
    together = minilm.embed(texts)
    alone = np.stack([minilm.embed([text])[0] for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_minilm_truncates_long_texts_at_256_tokens(minilm: Embedder) -> None:
    long_text = "the quick brown fox jumps over the lazy dog " * 40  # ~360 tokens
    head, with_tail = minilm.embed([long_text, long_text + " quarterly revenue report"])
    np.testing.assert_array_equal(head, with_tail)
    short, short_with_tail = minilm.embed(["the cat", "the cat quarterly revenue report"])
    assert float(short @ short_with_tail) < 0.99


def test_texts_are_validated(minilm: Embedder) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        minilm.embed(["fine", ""])
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        minilm.embed(["   \n"])
    with pytest.raises(TypeError, match="single string"):
        minilm.embed("not a list")
    with pytest.raises(TypeError, match="must be str"):
        minilm.embed([b"bytes"])  # type: ignore[list-item]
    assert minilm.embed([]).shape == (0, 384)


def test_model_sha256_is_checked_once_per_process(tmp_path: Path) -> None:
    tampered = tmp_path / "model.onnx"
    tampered.write_bytes(b"not the model")
    with pytest.raises(ModelIntegrityError, match="sha256"):
        local_minilm.verify_sha256(tampered)
    with pytest.raises(ModelIntegrityError, match="cannot read"):
        local_minilm.verify_sha256(tmp_path / "missing.onnx")

    local_minilm.bundled_onnx_path()
    hits = local_minilm._verified.cache_info().hits
    local_minilm.bundled_onnx_path()
    assert local_minilm._verified.cache_info().hits == hits + 1


def test_model_dir_holds_verified_model_and_tokenizer(tmp_path: Path) -> None:
    folder = local_minilm.prepare_model_dir(tmp_path)
    assert folder.parent == tmp_path
    assert os.path.samefile(folder / "model.onnx", local_minilm.bundled_onnx_path())
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == 256
    assert local_minilm.prepare_model_dir(tmp_path) == folder
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_damaged_model_dir_is_rebuilt(tmp_path: Path) -> None:
    folder = local_minilm.prepare_model_dir(tmp_path)
    (folder / "tokenizer.json").unlink()
    assert local_minilm.prepare_model_dir(tmp_path) == folder
    assert (folder / "tokenizer.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_processes_racing_to_build_the_model_dir_agree(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from memexdb.embedding import local_minilm; "
        "print(local_minilm.prepare_model_dir(Path(sys.argv[1])))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)],
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), results
    assert len({out.strip() for out, _ in results}) == 1
    folder = Path(results[0][0].strip())
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no staging leftovers
    assert {p.name for p in folder.iterdir()} == {
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
        "config.json",
        "special_tokens_map.json",
    }


def test_minilm_loads_without_network_in_a_fresh_process(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "def no_network(event, args):\n"
        "    if event in ('socket.connect', 'socket.getaddrinfo'):\n"
        "        raise RuntimeError(f'network attempted: {event} {args}')\n"
        "sys.addaudithook(no_network)\n"
        "from pathlib import Path\n"
        "from memexdb.embedding import LocalMiniLM\n"
        "model = LocalMiniLM(cache_dir=Path(sys.argv[1]))\n"
        "print(model.embed(['offline works']).shape)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(1, 384)"


# --- other embedders and the factory ---------------------------------------------------


def test_fastembed_model_from_a_local_folder_matches_minilm(minilm: Embedder) -> None:
    folder = local_minilm.prepare_model_dir()
    model = FastEmbedModel(
        "sentence-transformers/all-MiniLM-L6-v2",
        specific_model_path=folder,
        cache_dir=folder.parent,
        local_files_only=True,
    )
    assert (model.model_id, model.dim) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    texts = ["The cat sat on the mat", "Quarterly revenue grew 5%"]
    np.testing.assert_allclose(model.embed(texts), minilm.embed(texts), atol=1e-6)


def test_fastembed_model_load_failures_are_clear(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="not supported"):
        FastEmbedModel("nobody/no-such-model", cache_dir=tmp_path)
    with pytest.raises(EmbeddingError, match=r"BAAI/bge-small-en-v1\.5.*local only"):
        FastEmbedModel("BAAI/bge-small-en-v1.5", cache_dir=tmp_path, local_files_only=True)


def test_build_embedder_specs(minilm: Embedder) -> None:
    assert build_embedder() is minilm
    assert isinstance(minilm, LocalMiniLM)
    for bad in ("", "minilm:x", "fastembed:", "openai:", "word2vec"):
        with pytest.raises(ValueError, match="unknown embedder spec"):
            build_embedder(bad)
    with pytest.raises(ValueError, match="needs url"):
        build_embedder("openai:text-embedding-3-small")


# --- OpenAI-compatible endpoint, served for real on 127.0.0.1 --------------------------

API_KEY = "sk-test"


def reference_vector(text: str, dim: int) -> list[float]:
    """What the test server returns for ``text``: deterministic, deliberately not unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return [float(x) for x in np.random.default_rng(seed).normal(size=dim) * 3.0]


class EmbeddingsHandler(JsonHandler):
    server: "EmbeddingsServer"

    def do_POST(self) -> None:
        body = self.read_json()
        self.server.requests.append(body)
        if self.path != "/v1/embeddings":
            return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
        if self.headers.get("Authorization") != f"Bearer {API_KEY}":
            return self.send_json(401, {"error": {"message": "Incorrect API key provided"}})
        model = body["model"]
        if model == "overloaded":
            return self.send_json(503, {"error": {"message": "model is overloaded"}})
        if model == "slow":
            time.sleep(1.5)
        if model == "not-json":
            return self.send_raw(200, b"<html>proxy error</html>")
        dim = body.get("dimensions", 8)
        data = [
            {"object": "embedding", "index": i, "embedding": reference_vector(text, dim)}
            for i, text in enumerate(body["input"])
        ]
        data.reverse()  # clients must order by "index"
        return self.send_json(200, {"object": "list", "data": data, "model": model})


class EmbeddingsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), EmbeddingsHandler)
        self.requests: list[dict[str, Any]] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The timeout test hangs up on the slow handler; that broken pipe is expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingsServer]:
    with serving(EmbeddingsServer()) as httpd:
        yield httpd


@pytest.fixture
def base_url(server: EmbeddingsServer) -> str:
    server.requests.clear()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_openai_embeddings_are_ordered_and_normalised(
    server: EmbeddingsServer, base_url: str
) -> None:
    texts = [f"text {i}" for i in range(5)]
    with OpenAIEmbeddings(base_url + "/", "tiny-embed", api_key=API_KEY, dim=8) as model:
        vectors = model.embed(texts)
        assert (model.model_id, model.dim) == ("tiny-embed", 8)
    expected = np.array([reference_vector(t, 8) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert server.requests == [{"model": "tiny-embed", "input": texts, "encoding_format": "float"}]


def test_openai_embeddings_split_into_requests(server: EmbeddingsServer, base_url: str) -> None:
    texts = [f"text {i}" for i in range(10)]
    with OpenAIEmbeddings(base_url, "tiny-embed", api_key=API_KEY, batch_size=4) as model:
        vectors = model.embed(texts)
        np.testing.assert_allclose(vectors[7], model.embed([texts[7]])[0])
    assert [len(r["input"]) for r in server.requests] == [4, 4, 2, 1]


def test_openai_dim_is_probed_or_requested(server: EmbeddingsServer, base_url: str) -> None:
    with OpenAIEmbeddings(base_url, "tiny-embed", api_key=API_KEY) as model:
        assert model.dim == 8
        assert model.embed([]).shape == (0, 8)
    with OpenAIEmbeddings(
        base_url, "tiny-embed", api_key=API_KEY, dim=16, request_dimensions=True
    ) as model:
        assert model.embed(["a"]).shape == (1, 16)
    assert server.requests[-1]["dimensions"] == 16
    with (
        OpenAIEmbeddings(base_url, "tiny-embed", api_key=API_KEY, dim=384) as model,
        pytest.raises(EmbeddingServiceError, match="dimension 384, got 8"),
    ):
        model.embed(["a"])


def test_openai_errors_are_clear(base_url: str) -> None:
    cases = [
        (OpenAIEmbeddings(base_url, "tiny-embed"), "HTTP 401: Incorrect API key"),
        (OpenAIEmbeddings(base_url, "overloaded", API_KEY), "HTTP 503: model is overloaded"),
        (OpenAIEmbeddings(base_url, "not-json", API_KEY), "unusable embeddings response"),
        (OpenAIEmbeddings(base_url, "slow", API_KEY, timeout=0.3), "timed out"),
        (OpenAIEmbeddings(base_url + "/nowhere", "x", API_KEY), "HTTP 404"),
    ]
    for model, message in cases:
        with model, pytest.raises(EmbeddingServiceError, match=message):
            model.embed(["hello"])


def test_openai_unreachable_server_is_clear() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before use: nothing listens there
    with (
        OpenAIEmbeddings(f"http://127.0.0.1:{port}/v1", "x") as model,
        pytest.raises(EmbeddingServiceError, match="cannot reach"),
    ):
        model.embed(["hello"])
    with pytest.raises(ValueError, match="http"):
        OpenAIEmbeddings("127.0.0.1:8000", "x")


def test_build_embedder_openai(base_url: str) -> None:
    model = build_embedder("openai:tiny-embed", url=base_url, api_key=API_KEY)
    assert isinstance(model, OpenAIEmbeddings)
    assert model.embed(["x"]).shape == (1, 8)
    assert build_embedder("openai:tiny-embed", url=base_url, api_key=API_KEY) is model


# --- micro-batching ----------------------------------------------------------------------


async def test_concurrent_embed_one_calls_are_batched(minilm: Embedder) -> None:
    counting = CountingEmbedder(minilm)
    texts = SENTENCES[:64]
    async with BatchingEmbedder(counting, max_batch=32, max_wait_ms=5) as batcher:
        vectors = await asyncio.gather(*(batcher.embed_one(t) for t in texts))
    assert len(counting.batch_sizes) < len(texts)
    assert max(counting.batch_sizes) <= 32
    assert sum(counting.batch_sizes) == len(texts)
    assert vectors[0].shape == (384,)
    np.testing.assert_allclose(np.stack(vectors), minilm.embed(texts), atol=1e-6)
    # All model calls ran on one worker thread, none on the event loop's.
    assert len(counting.thread_ids) == 1
    assert threading.get_ident() not in counting.thread_ids


async def test_requests_arriving_while_the_model_runs_form_the_next_batch(
    minilm: Embedder,
) -> None:
    slow = CountingEmbedder(SlowEmbedder(minilm, delay_s=0.6))
    async with BatchingEmbedder(slow, max_batch=8, max_wait_ms=1) as batcher:
        first = asyncio.ensure_future(batcher.embed_one("first"))
        later = []
        for text in SENTENCES[:5]:  # arrive one by one, each well after max_wait
            await asyncio.sleep(0.02)
            later.append(asyncio.ensure_future(batcher.embed_one(text)))
        vectors = await asyncio.gather(first, *later)
    assert slow.batch_sizes == [1, 5]
    np.testing.assert_allclose(
        np.stack(vectors), minilm.embed(["first", *SENTENCES[:5]]), atol=1e-6
    )


async def test_embed_many_splits_into_max_batch_chunks(minilm: Embedder) -> None:
    counting = CountingEmbedder(minilm)
    async with BatchingEmbedder(counting, max_batch=32) as batcher:
        vectors = await batcher.embed_many(SENTENCES)
        empty = await batcher.embed_many([])
    assert counting.batch_sizes == [32, 32, 6, 0]
    assert empty.shape == (0, 384)
    np.testing.assert_allclose(vectors, minilm.embed(SENTENCES), atol=1e-6)


async def test_model_errors_reach_every_waiting_caller() -> None:
    broken = BrokenEmbedder()
    async with BatchingEmbedder(broken, max_batch=32, max_wait_ms=5) as batcher:
        results = await asyncio.gather(
            *(batcher.embed_one(f"text {i}") for i in range(5)), return_exceptions=True
        )
        with pytest.raises(EmbeddingError, match="exploded on 3 texts"):
            await batcher.embed_many(["a", "b", "c"])
    assert broken.calls == 2
    assert all(isinstance(r, EmbeddingError) for r in results)
    assert "exploded on 5 texts" in str(results[0])


async def test_bad_text_fails_alone_and_cancelled_callers_are_skipped(
    minilm: Embedder,
) -> None:
    counting = CountingEmbedder(minilm)
    async with BatchingEmbedder(counting, max_wait_ms=20) as batcher:
        cancelled = asyncio.ensure_future(batcher.embed_one("never mind"))
        await asyncio.sleep(0)
        cancelled.cancel()
        good, bad = await asyncio.gather(
            batcher.embed_one("good text"), batcher.embed_one(""), return_exceptions=True
        )
    assert isinstance(bad, ValueError)
    assert isinstance(good, np.ndarray)
    np.testing.assert_allclose(good, minilm.embed(["good text"])[0], atol=1e-6)
    assert counting.batch_sizes == [1]


async def test_closed_batcher_refuses_work_after_draining(minilm: Embedder) -> None:
    batcher = BatchingEmbedder(minilm, max_wait_ms=50)
    queued = asyncio.ensure_future(batcher.embed_one("queued before close"))
    await asyncio.sleep(0)
    await batcher.aclose()
    assert (await queued).shape == (384,)
    with pytest.raises(EmbeddingError, match="closed"):
        await batcher.embed_one("too late")
    with pytest.raises(EmbeddingError, match="closed"):
        batcher.embed_sync(["too late"])


def test_batcher_serves_several_event_loops_and_sync_callers(minilm: Embedder) -> None:
    counting = CountingEmbedder(minilm)
    batcher = BatchingEmbedder(counting, max_batch=4)
    texts = SENTENCES[:6]
    results: list[Vectors] = []

    async def use_from_a_loop() -> None:
        results.append(np.stack(await asyncio.gather(*(batcher.embed_one(t) for t in texts))))

    for _ in range(2):  # each asyncio.run gets a new loop, in its own thread
        thread = threading.Thread(target=asyncio.run, args=(use_from_a_loop(),))
        thread.start()
        thread.join()
    results.append(batcher.embed_sync(texts))
    batcher.close()
    assert len(results) == 3
    for vectors in results:
        np.testing.assert_allclose(vectors, minilm.embed(texts), atol=1e-6)
    assert counting.batch_sizes == [4, 2, 4, 2, 4, 2]
    assert len(counting.thread_ids) == 1


def test_batcher_rejects_bad_settings(minilm: Embedder) -> None:
    with pytest.raises(ValueError, match="max_batch"):
        BatchingEmbedder(minilm, max_batch=0)
    with pytest.raises(ValueError, match="max_wait_ms"):
        BatchingEmbedder(minilm, max_wait_ms=-1)


# --- the cache of repeated texts -----------------------------------------------------------


async def test_repeated_texts_are_embedded_once(minilm: Embedder) -> None:
    counting = CountingEmbedder(minilm)
    texts = SENTENCES[:4]
    async with BatchingEmbedder(counting, max_batch=32, cache_entries=3) as batcher:
        # the same text twice in one batch: one model input
        first = await asyncio.gather(*(batcher.embed_one(t) for t in [*texts, texts[0]]))
        assert counting.batch_sizes == [4]
        again = await batcher.embed_one(texts[3])  # cached (the last 3 are kept)
        assert counting.batch_sizes == [4]
        evicted = await batcher.embed_one(texts[0])  # least recently used: gone
        assert counting.batch_sizes == [4, 1]
        many = await batcher.embed_many([texts[0], "new text", texts[0]])
        assert counting.batch_sizes == [4, 1, 1]
    reference = minilm.embed([*texts, "new text"])
    np.testing.assert_allclose(np.stack(first[:4]), reference[:4], atol=1e-6)
    np.testing.assert_array_equal(first[4], first[0])
    np.testing.assert_array_equal(again, first[3])
    np.testing.assert_allclose(evicted, reference[0], atol=1e-6)
    np.testing.assert_allclose(many, reference[[0, 4, 0]], atol=1e-6)
    assert not again.flags.writeable  # a caller cannot change what others will get


def test_cache_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="entries"):
        EmbeddingCache(0)


async def test_model_calls_are_counted_by_operation_and_failures_by_type(base_url: str) -> None:
    """memex_embedding_duration_seconds{operation} and memex_embedding_errors_total
    {operation, error_type}: the memex service's names (embed: one text, embed_batch:
    more), from a real server that answers and one that is overloaded (HTTP 503)."""
    from prometheus_client import REGISTRY

    def seen(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    duration = "memex_embedding_duration_seconds_count"
    errors = "memex_embedding_errors_total"
    failed = {"error_type": "EmbeddingServiceError"}
    before = {
        op: (seen(duration, operation=op), seen(errors, operation=op, **failed))
        for op in ("embed", "embed_batch")
    }
    with OpenAIEmbeddings(base_url, "tiny-embed", API_KEY, dim=8) as good:
        async with BatchingEmbedder(good) as batcher:
            await batcher.embed_one("one")
            await batcher.embed_many(["one more", "and another"])
    with OpenAIEmbeddings(base_url, "overloaded", API_KEY, dim=8) as busy:
        async with BatchingEmbedder(busy) as batcher:
            with pytest.raises(EmbeddingServiceError, match="HTTP 503"):
                await batcher.embed_one("one")
            with pytest.raises(EmbeddingServiceError, match="HTTP 503"):
                await batcher.embed_many(["two", "texts"])
    for op in ("embed", "embed_batch"):
        calls, failures = before[op]
        assert seen(duration, operation=op) == calls + 1, op
        assert seen(errors, operation=op, **failed) == failures + 1, op
