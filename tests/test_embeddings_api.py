"""POST /v1/embeddings on the service's app in process, through OpenAI's official Python client:
the vectors are the Python embedder's, bit for bit (floats and base64), long texts in
full; the model is checked (another is OpenAI's 404 model_not_found); bounds are 422s
naming the field; errors carry OpenAI's error object (type, param, code); any valid key
may embed, no key or a revoked one may not; embedding counts against the read rate
limit."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import psycopg
import pytest
from memexdb_client import MemexClient, NotFound

from memexdb.embedded import EmbeddedPostgres
from memexdb.embedding import Embedder
from memexdb.embedding.long_text import embed_in_full, plan, window_of
from memexdb.embeddings.models import (
    EMBEDDING_INPUT_MAX_CHARS,
    EMBEDDINGS_MAX_INPUTS,
    EMBEDDINGS_MAX_TOTAL_CHARS,
)
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import (
    Service,
    Through,
    client,
    free_port,
    in_process_service,
    required,
    service_env,
    uvicorn_args,
)
from tests.test_typescript_client import npm_env, run

TEXTS = [
    "Alice prefers dark mode in every editor",
    "To deploy, run make release and tag the commit",
    "Bob is allergic to peanuts",
]
LONG = " ".join(
    f"In week {n} the team moved the billing service to the new cluster, measured its"
    f" latency and wrote down what broke." * 3
    for n in range(20)
)


def decoded(embedding: list[float] | str) -> np.ndarray:
    """A vector as the API sends it: numbers, or base64 of float32 little-endian bytes
    (which the client hands over as it is when asked for base64 explicitly)."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding), dtype="<f4").astype(np.float32)
    return np.array(embedding, dtype=np.float32)


@dataclass
class Live:
    dsn: str
    http: httpx.Client
    token: str  # a read key of agent "A": any valid key may embed
    base_url: str
    service: Service | None = None  # None: the app runs in this process (`http`'s transport)

    def openai(self, token: str | None = None, **options: object) -> openai.OpenAI:
        # In process, the OpenAI client sends through the module's TestClient (its own
        # httpx.Client around it, which it may close without ending the module's app).
        transport = None if self.service else Through(self.http)
        return openai.OpenAI(
            base_url=f"{self.base_url}/v1",
            api_key=token or self.token,
            max_retries=0,
            timeout=120,
            http_client=httpx.Client(transport=transport, timeout=120),
            **options,  # type: ignore[arg-type]
        )


def _read_key(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("select token from memex.create_key('read', 'A')").fetchone()
        assert row is not None
        return str(row[0])


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Live]:
    """The service's app in this process (tests.live_service.in_process_service) on its own
    database, which has a read key: what the endpoint answers, without a process."""
    dsn = new_database(pg_server)
    try:
        token = _read_key(dsn)
        with in_process_service(dsn) as http:
            yield Live(dsn, http, token, str(http.base_url).rstrip("/"))
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def served(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Live]:
    """A uvicorn process on its own database: for the clients that run as other programs
    (a Python script, Node), e2e."""
    dsn = new_database(pg_server)
    token = _read_key(dsn)
    root = scratch_dir("memexdb-embeddings-")
    port = free_port()
    service = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, root / "log")
    try:
        service.wait_healthy()
        with client(service.base_url) as http:
            yield Live(dsn, http, token, service.base_url, service)
        assert "Traceback" not in service.output(), service.output()[-4000:]
        service.stop()
    finally:
        service.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(root, ignore_errors=True)


def test_the_openai_client_gets_the_python_embedders_vectors(
    live: Live, embedder: Embedder
) -> None:
    expected = embedder.embed(TEXTS)
    with live.openai() as api:
        for encoding in ("float", "base64"):
            answer = api.embeddings.create(
                model=embedder.model_id, input=TEXTS, encoding_format=encoding
            )
            assert answer.model == embedder.model_id and answer.object == "list"
            assert [d.index for d in answer.data] == [0, 1, 2]
            got = np.array([decoded(d.embedding) for d in answer.data])
            assert got.dtype == np.float32 and np.array_equal(got, expected), encoding
        # the client's default: it asks for base64 and decodes it itself
        default = api.embeddings.create(model=embedder.model_id, input=TEXTS[0])
        assert np.array_equal(np.array(default.data[0].embedding, dtype=np.float32), expected[0])
    tokens = sum(len(s) for s in window_of(embedder).spans(TEXTS))
    assert answer.usage.prompt_tokens == answer.usage.total_tokens == tokens


def test_a_long_text_is_embedded_in_full(live: Live, embedder: Embedder) -> None:
    assert len(LONG) <= EMBEDDING_INPUT_MAX_CHARS
    assert len(plan([LONG], window_of(embedder)).pieces) > 2
    with live.openai() as api:
        answer = api.embeddings.create(model=embedder.model_id, input=[LONG, TEXTS[0]])
    got = np.array([d.embedding for d in answer.data], dtype=np.float32)
    assert np.array_equal(got, embed_in_full(embedder, [LONG, TEXTS[0]]))
    assert not np.array_equal(got[0], embedder.embed([LONG])[0])  # not its first 256 tokens


def test_the_model_may_be_left_out_but_no_other_may_be_named(
    live: Live, embedder: Embedder
) -> None:
    headers = {"authorization": f"Bearer {live.token}"}
    r = live.http.post("/v1/embeddings", json={"input": "hello"}, headers=headers)
    assert r.status_code == 200 and r.json()["model"] == embedder.model_id
    assert len(r.json()["data"][0]["embedding"]) == 384
    # as OpenAI answers a model it does not serve: 404, code model_not_found
    with live.openai() as api, pytest.raises(openai.NotFoundError) as refused:
        api.embeddings.create(model="text-embedding-3-small", input="hello")
    assert refused.value.code == "model_not_found"
    assert refused.value.type == "invalid_request_error"
    assert refused.value.param is None
    assert embedder.model_id in refused.value.message
    assert "text-embedding-3-small" in refused.value.message
    # the OpenAPI document says which model (and size) it takes
    schema = live.http.get("/openapi.json").json()["components"]["schemas"]["EmbeddingRequest"]
    assert schema["properties"]["model"]["anyOf"][0]["enum"] == [embedder.model_id]
    assert schema["properties"]["dimensions"]["anyOf"][0]["enum"] == [embedder.dim]


def test_memexdbs_own_client_gets_a_not_found_for_another_model(served: Live) -> None:
    # memexdb's HTTP client runs its own event loop, so it talks to a process (e2e)
    with (
        MemexClient(served.base_url, served.token, retries=1) as memex,
        pytest.raises(NotFound, match="not served here"),
    ):
        memex.embed_texts("hello", model="text-embedding-3-small")


def test_dimensions_may_be_the_models_own(live: Live, embedder: Embedder) -> None:
    """OpenAI's `dimensions`: the model's own size is what it gets anyway (LangChain and
    others send it); any other is refused, since vectors are never shortened."""
    with live.openai() as api:
        answer = api.embeddings.create(
            model=embedder.model_id, input=TEXTS[0], dimensions=embedder.dim
        )
        assert np.array_equal(
            np.array(answer.data[0].embedding, dtype=np.float32), embedder.embed(TEXTS[:1])[0]
        )
        with pytest.raises(openai.UnprocessableEntityError) as refused:
            api.embeddings.create(model=embedder.model_id, input=TEXTS[0], dimensions=256)
    assert refused.value.param == "dimensions"
    assert refused.value.type == "invalid_request_error"
    assert refused.value.code == "invalid_argument"
    assert f"send {embedder.dim} or leave it out" in refused.value.message


@pytest.mark.parametrize(
    ("options", "param", "said"),
    [
        ({"input": "   "}, "input[0]", "input[0]: must contain a non-whitespace character"),
        ({"input": ["ok", ""]}, "input[1]", "input[1]: String should have at least 1 character"),
        ({"input": "ok", "encoding_format": "int8"}, "encoding_format", "encoding_format: "),
        ({"input": "ok", "extra_body": {"colour": "red"}}, "colour", "colour: "),
    ],
)
def test_the_openai_client_gets_openais_error_object(
    live: Live, embedder: Embedder, options: dict[str, Any], param: str, said: str
) -> None:
    """A 422 carries OpenAI's error object (message, type, param, code), which the
    official client reads into the exception, and the service's own fields beside it."""
    with live.openai() as api, pytest.raises(openai.UnprocessableEntityError) as refused:
        api.embeddings.create(model=embedder.model_id, **options)
    error = refused.value
    assert (error.type, error.param, error.code) == (
        "invalid_request_error",
        param,
        "invalid_argument",
    )
    assert said in str(error)  # "Error code: 422 - input[0]: must ..."
    body = error.response.json()["error"]
    assert set(body) == {"message", "type", "param", "code", "fields", "retry_after_seconds"}
    assert body["fields"][0]["field"] == param


def test_every_error_of_the_endpoint_is_openai_shaped(live: Live, embedder: Embedder) -> None:
    """Whichever layer answers (credentials, the router, the body's size, JSON syntax),
    an error of POST /v1/embeddings has OpenAI's fields; other paths keep the service's."""
    unknown = "mxk_" + "0" * 12 + "_" + "0" * 64
    with live.openai(token=unknown) as api, pytest.raises(openai.AuthenticationError) as denied:
        api.embeddings.create(model=embedder.model_id, input="hello")
    assert (denied.value.type, denied.value.code) == ("authentication_error", "unauthenticated")
    auth = {"authorization": f"Bearer {live.token}"}
    answers = {
        "GET": live.http.get("/v1/embeddings", headers=auth),
        "syntax": live.http.post(
            "/v1/embeddings",
            content=b'{"input": ',
            headers={**auth, "content-type": "application/json"},
        ),
    }
    assert answers["GET"].status_code == 405 and "POST" in answers["GET"].headers["allow"]
    assert answers["syntax"].status_code == 422
    for r in answers.values():
        error = r.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert "param" in error and error["code"]
        assert int(r.headers["content-length"]) == len(r.content)
    other = live.http.get("/v1/memories", params={"agent_id": "A"}, headers=auth)
    assert other.status_code == 422
    assert "type" not in other.json()["error"] and "param" not in other.json()["error"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input": []}, "input"),
        ({"input": "   "}, "input[0]"),
        ({"input": ["ok", ""]}, "input[1]"),
        ({"input": [[1, 2, 3]]}, "input[0]"),  # token arrays: not accepted
        ({"input": ["x"] * (EMBEDDINGS_MAX_INPUTS + 1)}, "input"),
        ({"input": ["y" * (EMBEDDING_INPUT_MAX_CHARS + 1)]}, "input[0]"),
        ({"input": ["z" * 8000] * (EMBEDDINGS_MAX_TOTAL_CHARS // 8000 + 1)}, "input"),
        # one text more than allowed, each as long as allowed: still a 422, not a 413
        ({"input": ["w" * EMBEDDING_INPUT_MAX_CHARS] * (EMBEDDINGS_MAX_INPUTS + 1)}, "input"),
        ({"input": "ok", "encoding_format": "int8"}, "encoding_format"),
        ({"input": "ok", "dimensions": 128}, "dimensions"),
    ],
)
def test_bad_requests_are_422s_naming_the_field(
    live: Live, body: dict[str, object], field: str
) -> None:
    r = live.http.post(
        "/v1/embeddings", json=body, headers={"authorization": f"Bearer {live.token}"}
    )
    assert r.status_code == 422, r.text[:300]
    assert r.json()["error"]["fields"][0]["field"] == field


def test_any_valid_key_may_embed_and_nothing_else(live: Live, embedder: Embedder) -> None:
    unknown = "mxk_" + "0" * 12 + "_" + "0" * 64
    with (
        live.openai(token=unknown) as api,
        pytest.raises(openai.AuthenticationError, match="invalid API key"),
    ):
        api.embeddings.create(model=embedder.model_id, input="hello")
    r = live.http.post("/v1/embeddings", json={"input": "hello"})  # no key: the db has keys
    assert r.status_code == 401
    with psycopg.connect(live.dsn, autocommit=True) as conn:
        row = conn.execute("select token, prefix from memex.create_key('write', 'B')").fetchone()
        assert row is not None
        with live.openai(token=row[0]) as api:  # another agent's key: a text is no tenant's
            assert len(api.embeddings.create(model=embedder.model_id, input="x").data) == 1
            conn.execute("select memex.revoke_key(%s)", (row[1],))
            with pytest.raises(openai.AuthenticationError, match="revoked"):
                api.embeddings.create(model=embedder.model_id, input="x")


def test_embedding_counts_against_the_read_rate_limit(live: Live, embedder: Embedder) -> None:
    with psycopg.connect(live.dsn, autocommit=True) as conn:
        row = conn.execute("select token from memex.create_key('read', 'C')").fetchone()
        assert row is not None
        limit = (
            "insert into memex.settings (name, value) values ('rate_limit_search_per_minute', %s)"
            " on conflict (name) do update set value = excluded.value"
        )
        conn.execute(limit, ("2",))
        try:
            with live.openai(token=row[0]) as api:
                for _ in range(2):
                    api.embeddings.create(model=embedder.model_id, input="x")
                with pytest.raises(openai.RateLimitError) as limited:
                    api.embeddings.create(model=embedder.model_id, input="x")
            assert int(limited.value.response.headers["retry-after"]) >= 1
            assert (limited.value.type, limited.value.code) == ("rate_limit_error", "rate_limited")
        finally:
            conn.execute(limit, ("null",))


def test_the_docs_example_runs_as_written(served: Live) -> None:
    live = served
    """The example of docs/embeddings.md (moved there from the README)."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "embeddings.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    block = next(b for b in blocks if "embeddings.create" in b)
    script = block.replace("http://localhost:8000", live.base_url)
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMEX_API_KEY": live.token},
        check=True,
    )
    assert out.stdout == "384 3\n"


# OpenAI's official npm client, installed from the registry into a scratch project (npm's
# cache is the TypeScript client's): its errors read the same object.
NPM_OPENAI = "openai@6.49.0"
NPM_SCRIPT = """\
import OpenAI from "openai";

const api = new OpenAI({ baseURL: process.env.BASE, apiKey: process.env.KEY, maxRetries: 0 });
const model = process.env.MODEL;
const dims = Number(process.env.DIM);
const out = {};
const ok = await api.embeddings.create({ model, input: ["hello"], dimensions: dims });
out.ok = ok.data[0].embedding.length;
const refused = {
  model: { model: "text-embedding-3-small", input: "hello" },
  blank: { model, input: ["ok", "   "] },
  dimensions: { model, input: "hello", dimensions: 7 },
};
for (const [name, request] of Object.entries(refused)) {
  try {
    await api.embeddings.create(request);
    out[name] = null;
  } catch (err) {
    const { status, type, param, code, message } = err;
    out[name] = { status, type, param, code, message };
  }
}
console.log(JSON.stringify(out));
"""


def test_the_npm_openai_client_reads_the_error_object(
    served: Live, embedder: Embedder, tmp_path: Path
) -> None:
    live = served
    npm = required(shutil.which("npm"), "npm is not installed")
    node = required(shutil.which("node"), "node is not installed")
    (tmp_path / "package.json").write_text('{"private": true, "type": "module"}\n')
    run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error", NPM_OPENAI], tmp_path)
    (tmp_path / "errors.mjs").write_text(NPM_SCRIPT)
    env = npm_env(
        BASE=f"{live.base_url}/v1",
        KEY=live.token,
        MODEL=embedder.model_id,
        DIM=str(embedder.dim),
    )
    out = json.loads(run([node, "errors.mjs"], tmp_path, env).strip().splitlines()[-1])
    assert out["ok"] == embedder.dim
    assert out["model"]["status"] == 404 and out["model"]["code"] == "model_not_found"
    assert out["model"]["type"] == "invalid_request_error" and out["model"]["param"] is None
    assert {k: out["blank"][k] for k in ("status", "type", "param", "code")} == {
        "status": 422,
        "type": "invalid_request_error",
        "param": "input[1]",
        "code": "invalid_argument",
    }
    assert "input[1]: must contain a non-whitespace character" in out["blank"]["message"]
    assert (out["dimensions"]["status"], out["dimensions"]["param"]) == (422, "dimensions")
