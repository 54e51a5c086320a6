"""Build an embedder from a short spec string, e.g. from configuration."""

import functools

from memexdb.embedding.protocol import Embedder

DEFAULT_SPEC = "minilm"


def build_embedder(
    spec: str = DEFAULT_SPEC, *, url: str | None = None, api_key: str | None = None
) -> Embedder:
    """Return the process-wide embedder for ``spec``, loading it on first use.

    ``spec`` is one of:

    - ``"minilm"``: the bundled all-MiniLM-L6-v2 int8 (384-d, offline);
    - ``"fastembed:<model name>"``, e.g. ``"fastembed:BAAI/bge-small-en-v1.5"``
      (downloaded from its hub on first use);
    - ``"openai:<model name>"`` with ``url`` (e.g. ``https://api.openai.com/v1``) and
      usually ``api_key``; the dimension is asked from the server on first use.

    Calls with the same arguments share one instance, so each model is loaded once.
    """
    kind, name = parse_spec(spec, url=url)
    if kind == "minilm":
        return _build("minilm", "", None, None)
    return _build(kind, name, url, api_key)


def parse_spec(spec: str, *, url: str | None = None) -> tuple[str, str]:
    """``spec`` as (kind, model name), loading nothing: ValueError saying what is accepted
    when it names no embedder (checked with the settings, before anything starts)."""
    kind, colon, name = spec.strip().partition(":")
    kind, name = kind.strip().lower(), name.strip()
    if (kind, colon) == ("minilm", ""):
        return "minilm", ""
    if kind in ("fastembed", "openai") and name:
        if kind == "openai" and not url:
            raise ValueError("the openai embedder needs url, e.g. https://api.openai.com/v1")
        return kind, name
    raise ValueError(
        f"unknown embedder spec {spec!r}; use 'minilm', 'fastembed:<model name>' "
        "or 'openai:<model name>' (with url)"
    )


@functools.cache  # keyed on the normalised spec, so "minilm" and " MiniLM" share one model
def _build(kind: str, name: str, url: str | None, api_key: str | None) -> Embedder:
    # imported here, not at the top: fastembed and onnx take about a second of CPU to
    # import, which every `memexdb` command that embeds nothing (status, migrate, keys,
    # export) would pay
    if kind == "minilm":
        from memexdb.embedding.local_minilm import LocalMiniLM

        return LocalMiniLM()
    if kind == "fastembed":
        from memexdb.embedding.fastembed_model import FastEmbedModel

        return FastEmbedModel(name)
    from memexdb.embedding.openai_compat import OpenAIEmbeddings

    assert url is not None
    return OpenAIEmbeddings(url, name, api_key=api_key)
