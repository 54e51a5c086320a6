"""memexdb.embedding.long_text against the real bundled model: a text that fits the model's
window keeps the model's own vector; a longer one is cut into chunks the model reads
whole, at sentence ends where it can, and represented by the mean of its chunks."""

from __future__ import annotations

import re
from importlib import resources

import numpy as np
import pytest
from tokenizers import Tokenizer

from memexdb.embedding import BatchingEmbedder, Embedder, OpenAIEmbeddings
from memexdb.embedding.long_text import (
    CHAR_WINDOW,
    CharWindow,
    TokenizerWindow,
    embed_in_full,
    plan,
    window_of,
)

COOKING = (
    "To make the sauce, melt the butter in a pan and stir in the flour until it smells nutty. "
    "Whisk in the warm milk a little at a time so that no lumps form. "
)
STARS = (
    "Through the telescope the astronomer watched Jupiter's moons cross the planet. "
    "Later that night she photographed the Andromeda galaxy and a passing comet. "
)


@pytest.fixture(scope="module")
def window(embedder: Embedder) -> TokenizerWindow:
    found = window_of(embedder)
    assert isinstance(found, TokenizerWindow)
    return found


def counted(window: TokenizerWindow, text: str) -> int:
    return len(window.spans([text])[0])


def test_the_bundled_model_reads_254_tokens_besides_cls_and_sep(
    window: TokenizerWindow,
) -> None:
    assert window.capacity == 254
    text = "word " * 400
    assert counted(window, text) == 400  # the window's tokenizer counts past the window


def test_a_text_that_fits_keeps_the_models_own_vector(embedder: Embedder) -> None:
    texts = ["Alice prefers dark mode.", COOKING, "x"]
    assert np.array_equal(embed_in_full(embedder, texts), embedder.embed(texts))


def test_a_long_text_is_cut_at_sentence_ends_into_chunks_that_fit(
    embedder: Embedder, window: TokenizerWindow
) -> None:
    text = "\n".join(COOKING * 3 + STARS * 3 for _ in range(6))
    assert counted(window, text) > 3 * window.capacity
    cut = plan([text], window)
    assert len(cut.pieces) >= 4 and len(cut.tokens) == 1
    for piece, tokens in zip(cut.pieces, cut.tokens[0], strict=True):
        assert tokens == counted(window, piece) <= window.capacity
        assert piece.endswith("."), piece[-40:]  # every sentence here fits a window
    # nothing lost, nothing repeated, in order
    assert " ".join(cut.pieces).split() == text.split()


def test_sentences_longer_than_a_window_are_cut_between_words_then_inside_words(
    window: TokenizerWindow,
) -> None:
    words = " ".join(f"w{i}" for i in range(2000))  # one sentence of ~4000 tokens
    # no space in 6000 tokens (BERT reads a longer run of letters as one [UNK] token)
    digits = "-".join(str(i % 10) for i in range(3000))
    cjk = "我喜欢吃苹果。" * 200  # no spaces; 。 ends a sentence
    cut = plan([words, digits, cjk], window)
    assert [len(t) > 1 for t in cut.tokens] == [True, True, True]
    for piece in cut.pieces:
        assert counted(window, piece) <= window.capacity
    assert " ".join(cut.pieces[: len(cut.tokens[0])]).split() == words.split()
    assert "".join(cut.pieces[len(cut.tokens[0]) : -len(cut.tokens[2])]) == digits
    assert all(p.endswith("。") for p in cut.pieces[-len(cut.tokens[2]) : -1])


def test_a_long_texts_vector_is_the_token_weighted_mean_of_its_chunks(
    embedder: Embedder, window: TokenizerWindow
) -> None:
    text = COOKING * 6 + STARS * 2
    cut = plan([text], window)
    assert len(cut.pieces) == 2
    chunks = embedder.embed(cut.pieces).astype(np.float64)
    weights = np.array(cut.tokens[0], dtype=np.float64)
    expected = (chunks * weights[:, None]).sum(axis=0)
    expected /= np.linalg.norm(expected)
    vector = embed_in_full(embedder, [text])[0]
    assert vector.dtype == np.float32
    assert np.allclose(vector, expected, atol=1e-6)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_the_end_of_a_long_text_counts_where_truncation_drops_it(embedder: Embedder) -> None:
    text = COOKING * 8 + STARS * 4  # the stars come after the model's first 256 tokens
    query = embedder.embed(["astronomy: telescopes, planets, galaxies and comets"])[0]
    truncated = embedder.embed([text])[0]
    full = embed_in_full(embedder, [text])[0]
    assert float(full @ query) > float(truncated @ query) + 0.1


def test_embedders_without_a_tokenizer_are_cut_by_characters() -> None:
    remote = OpenAIEmbeddings("http://127.0.0.1:9/v1", "some-model", dim=384)
    try:
        found = window_of(remote)
    finally:
        remote.close()
    assert isinstance(found, CharWindow) and found.capacity == CHAR_WINDOW
    text = "All work and no play makes Jack a dull boy. " * 100
    cut = plan([text], found)
    assert all(len(re.sub(r"\s", "", p)) <= CHAR_WINDOW for p in cut.pieces)
    assert " ".join(cut.pieces).split() == text.split()


def test_a_window_that_holds_no_text_is_refused() -> None:
    bundled = resources.files("memexdb.embedding") / "minilm" / "tokenizer.json"
    tokenizer = Tokenizer.from_str(bundled.read_text())
    with pytest.raises(ValueError, match="holds no text"):
        TokenizerWindow(tokenizer, 2)


async def test_the_async_form_gives_the_same_vectors(
    embedder: Embedder, batching_embedder: BatchingEmbedder
) -> None:
    texts = ["a short one", COOKING * 8 + STARS * 4, STARS]
    assert np.array_equal(
        await batching_embedder.embed_in_full(texts), embed_in_full(embedder, texts)
    )
