"""Fused attention and GELU for the bundled MiniLM graph (a faster, equal model).

The bundled ONNX file is an exporter's graph of all-MiniLM-L6-v2: every layer's
attention is some twenty small operators (three projections, reshapes and transposes,
two scalings, a mask built by GatherND, softmax, a NaN guard), and GELU is spelled
out with Erf. onnxruntime's own graph optimisations (ORT_ENABLE_ALL, which fastembed
sets) fuse the layer norms but recognise neither of these, and neither does
``onnxruntime.transformers.optimizer`` (it finds the GELUs, not the attention).

``fuse`` rewrites them into onnxruntime's contrib operators ``Attention`` (one packed
QKV projection, the key-padding mask from ``attention_mask``) and ``BiasGelu``. The
weights stay as they are stored (int8 with a scale); the packed QKV matrix is a Concat
of the three dequantised ones, which onnxruntime folds once when the session loads.
Every pattern is checked exactly (operators, wiring, constants); a graph that does not
match is refused (``FusionError``) and the caller uses the original.

The vectors are the original model's: the only differences are in padded positions,
which mean pooling ignores (tests/test_embedding.py pins cosine >= 0.999 against the
reference vectors).
"""

import math
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS_DOMAIN = "com.microsoft"
NUM_HEADS = 12
HIDDEN = 384


class FusionError(ValueError):
    """The graph is not the one this module knows how to fuse."""


class _Graph:
    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.graph = model.graph
        self.producer: dict[str, onnx.NodeProto] = {
            out: n for n in self.graph.node for out in n.output
        }
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.graph.node:
            for name in n.input:
                self.consumers.setdefault(name, []).append(n)
        self.inits = {i.name: i for i in self.graph.initializer}

    def node(self, name: str, op: str) -> onnx.NodeProto:
        n = self.producer.get(name)
        if n is None or n.op_type != op:
            got = None if n is None else n.op_type
            raise FusionError(f"{name!r} is made by {got}, expected {op}")
        return n

    def only(self, name: str, op: str) -> onnx.NodeProto:
        """The one node that reads ``name``, which must be an ``op``."""
        users = self.consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op:
            raise FusionError(f"{name!r} is read by {[u.op_type for u in users]}, expected {op}")
        return users[0]

    def const(self, name: str) -> np.ndarray:
        if name not in self.inits:
            raise FusionError(f"{name!r} is not an initializer")
        return numpy_helper.to_array(self.inits[name])

    def scalar(self, name: str, expected: float, rel: float = 1e-6) -> None:
        value = self.const(name)
        if value.size != 1 or not math.isclose(float(value.ravel()[0]), expected, rel_tol=rel):
            raise FusionError(f"{name!r} is {value!r}, expected {expected}")

    def other(self, node: onnx.NodeProto, known: str) -> str:
        if len(node.input) != 2 or known not in node.input:
            raise FusionError(f"{node.name} does not take {known!r}")
        return str(node.input[1] if node.input[0] == known else node.input[0])


def _linear(g: _Graph, name: str) -> tuple[str, str, str]:
    """``name`` = MatMul(x, W) + b, b an initializer: returns (x, W, b)."""
    add = g.node(name, "Add")
    matmul_out = next((i for i in add.input if i not in g.inits), None)
    if matmul_out is None:
        raise FusionError(f"{add.name} adds no MatMul")
    bias = g.other(add, matmul_out)
    g.const(bias)
    matmul = g.node(matmul_out, "MatMul")
    return str(matmul.input[0]), str(matmul.input[1]), bias


def _heads(g: _Graph, name: str) -> str:
    """``name`` = Transpose(Reshape(linear, [B, S, heads, head]), [0, 2, 1, 3])."""
    transpose = g.node(name, "Transpose")
    perm = next((list(a.ints) for a in transpose.attribute if a.name == "perm"), None)
    if perm != [0, 2, 1, 3]:
        raise FusionError(f"{transpose.name} has perm {perm}")
    return str(g.node(transpose.input[0], "Reshape").input[0])


def _attention(g: _Graph, softmax: onnx.NodeProto, mask: str) -> tuple[onnx.NodeProto, ...]:
    """The nodes replacing one self-attention block, ending in its output's name."""
    head = HIDDEN // NUM_HEADS
    scale = 1.0 / math.sqrt(head)
    # softmax(Q*s . K^T*s + where(mask, 0, -max)) with s = scale ** 0.5
    add = g.node(softmax.input[0], "Add")
    scores = next(i for i in add.input if g.producer.get(i) and g.producer[i].op_type == "MatMul")
    where_mask = g.node(g.other(add, scores), "Where")
    g.scalar(where_mask.input[1], 0.0)
    if float(g.const(where_mask.input[2]).ravel()[0]) > -1e30:
        raise FusionError(f"{where_mask.name} does not mask with -inf")
    qk = g.node(scores, "MatMul")
    q_scaled, k_scaled = g.node(qk.input[0], "Mul"), g.node(qk.input[1], "Mul")
    for mul in (q_scaled, k_scaled):
        s = next((i for i in mul.input if i in g.inits), None)
        if s is None:
            raise FusionError(f"{mul.name} scales by no constant")
        g.scalar(s, math.sqrt(scale), rel=1e-5)
    q = _heads(g, next(i for i in q_scaled.input if i not in g.inits))
    # K^T: Reshape(Transpose(Reshape(k_heads, [-1, S, head]), [0, 2, 1]), [B, heads, head, S])
    k_t = g.node(next(i for i in k_scaled.input if i not in g.inits), "Reshape")
    k_tr = g.node(k_t.input[0], "Transpose")
    k_flat = g.node(k_tr.input[0], "Reshape")
    k = _heads(g, k_flat.input[0])
    # softmax -> where(isnan, 0, p) -> @ V -> Transpose -> Reshape [B, S, hidden]
    consumers = g.consumers.get(softmax.output[0], [])
    guard = next((c for c in consumers if c.op_type == "Where"), None)
    if guard is None or len(consumers) != 2:
        raise FusionError(f"{softmax.name} is not followed by its NaN guard")
    pv = [c for c in g.consumers.get(guard.output[0], []) if c.op_type == "MatMul"]
    if len(pv) != 1 or pv[0].input[0] != guard.output[0]:
        raise FusionError(f"{guard.name} does not feed one MatMul with V")
    v = _heads(g, pv[0].input[1])
    out_t = [c for c in g.consumers.get(pv[0].output[0], []) if c.op_type == "Transpose"]
    if len(out_t) != 1:
        raise FusionError(f"{pv[0].name} is not transposed back")
    out = [c for c in g.consumers.get(out_t[0].output[0], []) if c.op_type == "Reshape"]
    if len(out) != 1:
        raise FusionError(f"{out_t[0].name} is not reshaped back")

    (xq, wq, bq), (xk, wk, bk), (xv, wv, bv) = (_linear(g, n) for n in (q, k, v))
    if not xq == xk == xv:
        raise FusionError("Q, K and V are projections of different inputs")
    for w in (wq, wk, wv):
        if w not in g.producer and w not in g.inits:
            raise FusionError(f"weight {w!r} is neither computed nor stored")
    biases = [g.const(b) for b in (bq, bk, bv)]
    if any(b.shape != (HIDDEN,) for b in biases):
        raise FusionError("biases are not hidden-sized")
    name = softmax.name + "_fused"
    bias = numpy_helper.from_array(np.concatenate(biases).astype(np.float32), name + "_qkv_bias")
    g.graph.initializer.append(bias)
    packed = helper.make_node(
        "Concat", [wq, wk, wv], [name + "_qkv_weight"], name=name + "_qkv", axis=1
    )
    attention = helper.make_node(
        "Attention",
        [xq, packed.output[0], bias.name, mask],
        [out[0].output[0]],
        name=name,
        domain=MS_DOMAIN,
        num_heads=NUM_HEADS,
    )
    return packed, attention


def _gelu(g: _Graph, erf: onnx.NodeProto) -> onnx.NodeProto:
    """x * 0.5 * (1 + erf(x / sqrt 2)), x = MatMul + bias: one BiasGelu."""
    div = g.node(erf.input[0], "Div")
    x = div.input[0]
    g.scalar(div.input[1], math.sqrt(2.0))
    add = g.only(erf.output[0], "Add")
    g.scalar(g.other(add, erf.output[0]), 1.0)
    half = g.only(add.output[0], "Mul")
    g.scalar(g.other(half, add.output[0]), 0.5)
    last = g.only(half.output[0], "Mul")
    if g.other(last, half.output[0]) != x:
        raise FusionError(f"{half.name} is not multiplied by x")
    _, _, bias = _linear(g, x)  # x = MatMul(...) + bias
    a = g.other(g.node(x, "Add"), bias)
    return helper.make_node(
        "BiasGelu", [a, bias], [last.output[0]], name=erf.name + "_fused", domain=MS_DOMAIN
    )


def _prune(graph: onnx.GraphProto) -> None:
    """Drop nodes and initializers that no graph output depends on."""
    producer = {out: n for n in graph.node for out in n.output}
    needed: set[str] = set()
    stack = [o.name for o in graph.output]
    live: set[int] = set()
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        n = producer.get(name)
        if n is not None and id(n) not in live:
            live.add(id(n))
            stack.extend(i for i in n.input if i)
    kept = [n for n in graph.node if id(n) in live]
    del graph.node[:]
    graph.node.extend(kept)
    inits = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)


def _topological(nodes: Iterable[onnx.NodeProto], inputs: set[str]) -> list[onnx.NodeProto]:
    ready = set(inputs)
    pending = list(nodes)
    ordered: list[onnx.NodeProto] = []
    while pending:
        rest = []
        for n in pending:
            if all(not i or i in ready for i in n.input):
                ordered.append(n)
                ready.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise FusionError("the fused graph has a cycle or a dangling input")
        pending = rest
    return ordered


def fuse(data: bytes) -> bytes:
    """The bundled MiniLM ONNX model with fused attention and GELU, serialised.

    Raises FusionError if the graph is not the one expected (then use ``data`` as is).
    """
    model = onnx.load_from_string(data)
    g = _Graph(model)
    names = [i.name for i in g.graph.input]
    if "attention_mask" not in names:
        raise FusionError("the model takes no attention_mask")
    softmaxes = [n for n in g.graph.node if n.op_type == "Softmax"]
    erfs = [n for n in g.graph.node if n.op_type == "Erf"]
    if len(softmaxes) != 6 or len(erfs) != 6:
        raise FusionError(f"{len(softmaxes)} softmaxes and {len(erfs)} Erfs, expected 6 each")
    mask = helper.make_node(
        "Cast",
        ["attention_mask"],
        ["attention_mask_int32"],
        name="mask_int32",
        to=onnx.TensorProto.INT32,
    )
    added: list[onnx.NodeProto] = [mask]
    for softmax in softmaxes:
        added.extend(_attention(g, softmax, mask.output[0]))
    added.extend(_gelu(g, erf) for erf in erfs)
    replaced = {out for n in added for out in n.output}
    # the nodes that made the replaced outputs go; _prune drops what only they used
    kept = [n for n in g.graph.node if not replaced.intersection(n.output)]
    graph_inputs = {i.name for i in g.graph.input} | {i.name for i in g.graph.initializer}
    ordered = _topological([*kept, *added], graph_inputs)
    del g.graph.node[:]
    g.graph.node.extend(ordered)
    _prune(g.graph)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    if sum(n.op_type in ("Softmax", "Erf") for n in g.graph.node):
        raise FusionError("an attention or a GELU was left unfused")
    return bytes(model.SerializeToString())
