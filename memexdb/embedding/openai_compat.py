"""An OpenAI-compatible ``POST {url}/embeddings`` endpoint as an Embedder.

Works with OpenAI itself and with servers that copy its API (vLLM, Ollama's /v1,
llama.cpp, text-embeddings-inference, LiteLLM, ...).
"""

from collections.abc import Sequence
from typing import Any, Self

import httpx
import numpy as np

from memexdb.embedding.errors import EmbeddingError, EmbeddingServiceError
from memexdb.embedding.protocol import Vectors, no_vectors, unit_rows, validate_texts

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_BATCH_SIZE = 64


class OpenAIEmbeddings:
    """Embeddings from ``POST {url}/embeddings``, e.g. url ``https://api.openai.com/v1``.

    ``dim`` None means: ask the server once (one probe request) when ``dim`` is first
    read. With ``request_dimensions`` the ``dimensions`` field is sent, which OpenAI's
    text-embedding-3 models use to shorten their vectors; other servers may reject it.
    Returned vectors are L2-normalised here, whatever the server does.
    """

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        batch_size: int = DEFAULT_BATCH_SIZE,
        request_dimensions: bool = False,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        if dim is not None and dim < 1:
            raise ValueError("dim must be >= 1")
        if request_dimensions and dim is None:
            raise ValueError("request_dimensions needs dim")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._endpoint = url.rstrip("/") + "/embeddings"
        self._model = model
        self._dim = dim
        self._batch_size = batch_size
        self._request_dimensions = request_dimensions
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            headers=headers,
            # A short connect timeout fails fast on a wrong url; reads may take a while.
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            # Retries only failed connection attempts, which never reached the server.
            transport=httpx.HTTPTransport(retries=2),
        )

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        batch = validate_texts(texts)
        if not batch:
            return no_vectors(self.dim)
        chunks: list[Vectors] = []
        for start in range(0, len(batch), self._batch_size):
            chunk = self._request(batch[start : start + self._batch_size])
            # The first answer fixes an unknown dim; _request holds later ones to it.
            if self._dim is None:
                self._dim = int(chunk.shape[1])
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:  # no api key here: reprs end up in logs
        return f"OpenAIEmbeddings({self._endpoint!r}, model={self._model!r}, dim={self._dim})"

    def _request(self, texts: list[str]) -> Vectors:
        payload: dict[str, Any] = {"model": self._model, "input": texts, "encoding_format": "float"}
        if self._request_dimensions:
            payload["dimensions"] = self._dim
        try:
            response = self._client.post(self._endpoint, json=payload)
        except httpx.TimeoutException as exc:
            raise EmbeddingServiceError(
                f"{self._endpoint} timed out ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingServiceError(f"cannot reach {self._endpoint}: {exc}") from exc
        if response.status_code != 200:
            raise EmbeddingServiceError(
                f"{self._endpoint} answered HTTP {response.status_code}: {_error_text(response)}"
            )
        try:
            return unit_rows(
                _embeddings_in_order(response.json(), len(texts)),
                expected_rows=len(texts),
                dim=self._dim,
            )
        except (ValueError, TypeError, KeyError, EmbeddingError) as exc:
            raise EmbeddingServiceError(
                f"{self._endpoint} answered an unusable embeddings response: {exc}"
            ) from exc


def _embeddings_in_order(body: Any, count: int) -> list[list[float]]:
    data = body["data"]
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected {count} items in 'data'")
    # The API gives each item its input index; don't rely on the order of the list.
    ordered = sorted(data, key=lambda item: int(item["index"]))
    if [int(item["index"]) for item in ordered] != list(range(count)):
        raise ValueError("'index' values are not 0..n-1")
    rows: list[list[float]] = [item["embedding"] for item in ordered]
    if any(not isinstance(row, list) or not row for row in rows):
        raise ValueError("an 'embedding' is not a non-empty list of floats")
    if len({len(row) for row in rows}) != 1:
        raise ValueError("embeddings have different lengths")
    return rows


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
        message = body["error"]["message"] if isinstance(body.get("error"), dict) else None
    except (ValueError, AttributeError, KeyError):
        message = None
    text = str(message) if message else response.text
    return text[:500] or response.reason_phrase
