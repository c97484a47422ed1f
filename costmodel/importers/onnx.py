"""Networks from ONNX files: Conv, Gemm and MatMul nodes become `Layer` s, the arithmetic between
them becomes `VectorOp` s (softmax, norms, activations, element-wise adds and multiplies), and
every other node is listed as ignored, with the reason.

Tensor shapes come from the file (graph inputs, outputs, ``value_info``, initializers) completed by
``onnx.shape_inference``; weight data are never read (external data files need not exist): only
one-element constants stored in the file are, to recognise the GELU pattern (rule 6).

A *constant* below is a tensor known before inference: an initializer, a Constant node's output,
or the output of a node whose inputs are all constants (a transposed or dequantized initializer).
An *activation* is any other tensor. Rules (loop names as in `costmodel.workload`):

1. **Conv** (1-D or 2-D; weights ``[M, C/group, kH, kW]``): ``G = group``, ``K = M / G``,
   ``C = C_in / G``, ``FY, FX`` from the weights' shape, ``SY, SX`` from ``strides``, ``DY, DX``
   from ``dilations``, ``PY, PX`` the mean of the begin and end ``pads`` of each axis (``auto_pad``
   SAME_UPPER / SAME_LOWER / VALID honoured), ``in_rows, in_cols`` the input's spatial shape
   (unpadded; None where the file gives no input shape), ``OY, OX`` from the output's shape or else
   ``floor((I + pad_begin + pad_end - D*(F-1) - 1) / S) + 1``. ``B`` is the batch (axis 0).
   ``kind = "dwconv"`` when ``G > 1`` and ``C = 1`` (depthwise), else ``"conv"``. A 1-D conv has
   ``OY = FY = 1``. A 3-D (or higher) conv is refused.
2. **Gemm** ``Y = A' B' (+ C)`` (``transA``, ``transB`` honoured): ``kind = "fc"``, ``B`` = rows of
   ``A'``, ``C`` = its columns, ``K`` = columns of ``B'``.
3. **MatMul** by a constant second operand (a weight; NumPy semantics): ``C`` = the contracted
   size, ``K`` = columns of the second operand; when the weight has batch axes (distinct
   matrices per batch element) their product is ``G``, and every other row of the output goes
   into ``B``. ``kind``: ``"matmul"`` when ``G = 1`` and the first operand has 3 or more axes
   (rows of tokens, ``[batch, seq, features]``: a transformer's projections and FFN), ``"fc"``
   when ``G = 1`` and it has 1 or 2 (a classifier on ``[batch, features]``), else a grouped 1x1
   ``"conv"``. A MatMul of a constant first operand by an activation is read the same way.
4. **MatMul of two activations** (attention's ``Q K^T`` and ``P V``): ``kind = "matmul"``,
   ``G = 1``, ``w_role = "kv_cache"`` (its second operand is the K or V of the attention, read as
   the zoo's transformers read their KV cache); ``B`` = rows of the first operand (with the rows
   of the batch elements that share one second-operand matrix by broadcasting), ``C`` = the
   contracted size, ``K`` = columns. The product of the second operand's batch axes (batch x
   heads) is the layer's repeat (`Network.repeats`), not ``G``: these are independent matmuls
   run one after another, as `costmodel.transformer` counts ``score`` and ``context``.
5. **KV projections**: a weight layer (rule 2 or 3) whose output reaches the second operand of a
   rule-4 MatMul through nothing but Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Cast,
   Identity, Expand or Tile, an Add / Sub / Mul / Div with a constant (a bias, a scale), or a
   Concat with the past cache (its other inputs graph inputs or constants) has ``o_role =
   "kv_cache"``: its output is what attention reads as K or V. Anything else on the way (RoPE's
   rotate-and-add, the Split of a fused QKV projection) leaves the layer an ``activation``.
6. **Vector ops**, found first as fused patterns: ``Mul(x, Sigmoid(x))`` is one ``silu``; ``x *
   0.5 * (1 + Erf(x / sqrt 2))`` (the Div by sqrt 2 or a Mul by 1/sqrt 2, the Muls by x and by
   0.5 in any order) is one ``gelu``; the pattern's intermediate tensors must have no other
   reader. Then one node each: **Softmax** -> ``softmax``; **LayerNormalization** ->
   ``layernorm``; **RMSNormalization** (opset 23) and **SimplifiedLayerNormalization** (ONNX
   Runtime's, default or ``com.microsoft`` domain) -> ``rmsnorm``; **Gelu** (opset 20) ->
   ``gelu``; **Add** / **Sub** -> ``add`` and **Mul** -> ``mul``, ``inputs = 2`` for two
   activations, 1 for an activation and a constant (a bias, a scale); **Div** by a constant ->
   ``mul`` with ``inputs = 1``. ``elements`` = the output's elements (a broadcast operand counts
   as a whole tensor); ``rows`` (row-wise ops) = the product of the axes before ``axis``
   (Softmax from opset 13: of every axis but ``axis``), so the product of all axes but the last
   for the usual ``axis = -1``; ``bits`` None (the accelerator's activation precision).
7. **Ignored** (not costed; `OnnxImport.reasons` says why): nodes that move data (Reshape,
   Transpose, Gather, Concat, Split, Shape, Unsqueeze, Cast, ...: `onnx_vector.DATA_OPS`), a lone Sigmoid or
   Tanh (no vector op computes one), Add / Sub / Mul / Div of constants only or on integer
   tensors (shape arithmetic), a Div by an activation, nodes of other domains, ops with no vector
   op (Relu, pooling, Erf or Pow outside the GELU pattern, ...), and vector ops whose output shape
   is unknown.

Every node becomes its own layer or vector op (repeat 1 but rule 4's), named after the node
(``<op>#<index>`` for an unnamed one; a fused op after the node producing its output), in graph
order; `costmodel.workload.Network.unique` merges layers of equal shape. A symbolic or unknown
batch axis (axis 0 of an activation) counts as 1; any other unknown size of a layer is an error.
Precisions are the `Layer` defaults (8-bit operands, 32-bit partial sums) whatever the element
type, as in the CSV zoo.

Against `costmodel.transformer`'s step of the same shapes: a multi-head attention block
imports with the zoo's layers and roles (tested on BERT-base). A grouped-query (GQA) export
expands K and V to every query head before the MatMuls, so ``score`` / ``context`` import with
``B = q_len`` repeated batch x heads times where the zoo has ``B = group x q_len`` repeated batch
x kv_heads times (same MACs, K/V read once per query head). An explicit score scaling (a Div or
Mul before the Softmax) and a mask Add are vector ops here; the zoo folds both into its softmax
(``workload["not_costed"]``), and `costmodel.vector` costs the scaling inside ``softmax``, so such a
node is counted on top. Not recognised: the tanh form of GELU (GPT-2; its Tanh is ignored),
LayerNorm decomposed into ReduceMean / Sub / Pow / Sqrt / Div (older opsets), RoPE (its Muls and
Adds import one by one), fused ONNX Runtime ops (Attention, SkipLayerNormalization, ...).

This module is ``costmodel.importers.onnx``; ``import onnx`` inside it is the onnx package (absolute
imports). The vector rules' code is `costmodel.importers.onnx_vector`.

Public API: `read_onnx` (layers, vector ops, the nodes they came from, ignored nodes and why),
`load_onnx`; errors: `OnnxError` (a ValueError).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import cast
from pathlib import Path

from costmodel.importers.errors import OnnxError
from costmodel.importers.onnx_vector import GraphView, graph_view, vector_specs
from costmodel.workload import Layer, Network, VectorOp

__all__ = ["OnnxImport", "read_onnx", "load_onnx", "LAYER_OPS", "OnnxError"]

#: The ONNX operators that become layers.
LAYER_OPS = ("Conv", "Gemm", "MatMul")

_Shape = tuple  # of int | None (unknown or symbolic size)

#: What may lie between a KV projection and attention's MatMul (rule 5) besides a constant's Add,
#: Sub, Mul or Div and a past-cache Concat: ops that only move data (their input 0).
_KV_PASS = ("Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Cast", "Identity", "Expand", "Tile")


@dataclass(frozen=True)
class OnnxImport:
    """What an ONNX file holds for us (rules: the module docstring).

    ``network``: the layers (one per Conv / Gemm / MatMul node, in graph order; repeats 1 but a
    MatMul of two activations, repeated over its batch axes) and the vector ops (in graph order,
    repeats 1); ``nodes``: the ``(node name, op type)`` each layer came from; ``vector_nodes``: the
    ``(node name, op type)`` of each vector op (a fused pattern: the node producing its output and
    the ``+``-joined op types of its nodes, e.g. ``Sigmoid+Mul``); ``ignored``: the ``(node name,
    op type)`` of every node not costed, and ``reasons`` why, one per ignored node. The nodes of a
    fused pattern appear in its ``vector_nodes`` entry only.
    """

    network: Network
    nodes: tuple[tuple[str, str], ...]
    ignored: tuple[tuple[str, str], ...]
    vector_nodes: tuple[tuple[str, str], ...] = ()
    reasons: tuple[str, ...] = ()


class _NodeError(OnnxError):
    """A problem with one node; `read_onnx` adds the file's name."""


def _load_model(path: Path):
    """The parsed ModelProto with inferred shapes. Raises OnnxError naming the file."""
    try:
        import onnx
        from onnx import shape_inference
    except ImportError:  # pragma: no cover - onnx is a dependency
        raise OnnxError(f"{path}: reading ONNX files needs the onnx package (pip install onnx)") from None
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OnnxError(f"{path}: cannot read ONNX file: {e.strerror or e}") from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf DecodeError and friends
        raise OnnxError(f"{path}: not an ONNX model ({type(e).__name__}: {e})") from None
    if not model.HasField("graph") or not model.graph.node:
        raise OnnxError(f"{path}: not an ONNX model (no graph with nodes)")
    try:
        return shape_inference.infer_shapes(model)
    except Exception as e:  # onnx raises its own InferenceError / ValidationError
        raise OnnxError(f"{path}: ONNX shape inference failed: {e}") from None


def _shapes(graph) -> dict[str, _Shape]:
    """Tensor name -> shape, from initializers, inputs, outputs and value_info."""
    out: dict[str, _Shape] = {}
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.HasField("shape"):
            out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
    for t in graph.initializer:
        out[t.name] = tuple(int(d) for d in t.dims)
    return out


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _shape_of(node, shapes: dict, idx: int, what: str, output: bool = False) -> _Shape | None:
    names = node.output if output else node.input
    if idx >= len(names) or not names[idx]:
        raise _NodeError(f"has no {what}")
    return shapes.get(names[idx])


def _known(shape: _Shape, name: str, batch_axis: bool) -> tuple[int, ...]:
    """``shape`` with every size known: an unknown axis 0 counts as 1 when ``batch_axis``."""
    dims = list(shape)
    if dims and dims[0] is None and batch_axis:
        dims[0] = 1
    if any(d is None or d < 0 for d in dims):
        raise _NodeError(f"tensor {name!r} has an unknown size in shape {list(shape)}")
    return tuple(dims)


def _out_size(i: int, f: int, s: int, d: int, pads: tuple[int, int]) -> int:
    """Output size of one conv axis: floor((i + pads - d*(f-1) - 1) / s) + 1."""
    return (i + pads[0] + pads[1] - d * (f - 1) - 1) // s + 1


def _axis_pads(auto_pad: str, i: int | None, o: int | None, f: int, s: int, d: int,
               given: tuple[int, int]) -> tuple[int, int]:
    """The (begin, end) padding of one axis under ``auto_pad``."""
    if auto_pad in ("", "NOTSET"):
        return given
    if auto_pad == "VALID":
        return (0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise _NodeError(f"unknown auto_pad {auto_pad!r}")
    if i is None:
        return given
    o = -(-i // s)
    total = max((o - 1) * s + d * (f - 1) + 1 - i, 0)
    small, big = total // 2, total - total // 2
    return (small, big) if auto_pad == "SAME_UPPER" else (big, small)


def _conv(node, shapes: dict, name: str) -> Layer:
    """The layer of a Conv node (rules: the module docstring)."""
    a = _attrs(node)
    w = _shape_of(node, shapes, 1, "weights input")
    if w is None:
        raise _NodeError(f"no shape for its weights {node.input[1]!r}")
    w = _known(w, node.input[1], batch_axis=False)
    nd = len(w) - 2
    if nd not in (1, 2):
        raise _NodeError(f"a {nd}-D convolution (weights shape {list(w)}) is not supported; only 1-D and 2-D")
    x = _shape_of(node, shapes, 0, "data input")
    y = _shape_of(node, shapes, 0, "output", output=True)
    x = _known(x, node.input[0], True) if x is not None and len(x) == nd + 2 else None
    y = _known(y, node.output[0], True) if y is not None and len(y) == nd + 2 else None
    if x is None and y is None:
        raise _NodeError(f"no shape for its input {node.input[0]!r} or output {node.output[0]!r}")
    group = int(a.get("group", 1))
    m, cg, ks = w[0], w[1], list(w[2:])
    if group < 1 or m % group:
        raise _NodeError(f"group = {group} does not divide the {m} output channels")
    if x is not None and x[1] != cg * group:
        raise _NodeError(f"input has {x[1]} channels, weights expect {cg} x group {group}")
    if "kernel_shape" in a and list(a["kernel_shape"]) != ks:
        raise _NodeError(f"kernel_shape {list(a['kernel_shape'])} differs from the weights' {ks}")
    strides = list(a.get("strides", [1] * nd))
    dil = list(a.get("dilations", [1] * nd))
    pads = list(a.get("pads", [0] * (2 * nd)))
    if len(strides) != nd or len(dil) != nd or len(pads) != 2 * nd or min(strides + dil) < 1:
        raise _NodeError(f"bad strides {strides}, dilations {dil} or pads {pads} for a {nd}-D conv")
    auto_pad = a.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    sizes: list[tuple[int, int, int, int, float, int | None]] = []  # per axis: O, F, S, D, P, input
    for ax in range(nd):
        i = x[2 + ax] if x is not None else None
        o_given = y[2 + ax] if y is not None else None
        p = _axis_pads(auto_pad, i, o_given, ks[ax], strides[ax], dil[ax], (pads[ax], pads[nd + ax]))
        o = _out_size(i, ks[ax], strides[ax], dil[ax], p) if i is not None else o_given
        if o_given is not None and o != o_given:
            raise _NodeError(f"output size {o_given} on spatial axis {ax} differs from the {o} computed "
                             f"from input {i}, kernel {ks[ax]}, stride {strides[ax]}, dilation {dil[ax]}, pads {p}")
        # o is None only with neither an input nor an output shape: Layer then refuses OY / OX = None
        sizes.append((cast(int, o), ks[ax], strides[ax], dil[ax], (p[0] + p[1]) / 2, i))
    if nd == 1:
        sizes.insert(0, (1, 1, 1, 1, 0, None))
    (oy, fy, sy, dy, py, iy), (ox, fx, sx, dx, px, ix) = sizes
    batch = x[0] if x is not None else cast(tuple, y)[0]   # a conv node has an input or an output shape
    kind = "dwconv" if group > 1 and cg == 1 else "conv"
    return Layer(name=name, K=m // group, C=cg, OY=oy, OX=ox, FY=fy, FX=fx, B=batch, G=group,
                 SY=sy, SX=sx, DY=dy, DX=dx, PY=_num(py), PX=_num(px), kind=kind, in_rows=iy, in_cols=ix)


def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


def _gemm(node, shapes: dict, name: str) -> Layer:
    """The layer of a Gemm node: Y[M, N] = A'[M, C] B'[C, N]."""
    a = _attrs(node)
    sa = _shape_of(node, shapes, 0, "input A")
    sb = _shape_of(node, shapes, 1, "input B")
    if sb is None:
        raise _NodeError(f"no shape for its input B {node.input[1]!r}")
    sb = _known(sb, node.input[1], batch_axis=False)
    if len(sb) != 2 or (sa is not None and len(sa) != 2):
        raise _NodeError(f"Gemm operands must be 2-D, got A {sa} and B {list(sb)}")
    c, n = (sb[1], sb[0]) if a.get("transB", 0) else sb
    if sa is not None:
        sa = _known(sa, node.input[0], batch_axis=not a.get("transA", 0))
        rows, ca = (sa[1], sa[0]) if a.get("transA", 0) else sa
        if ca != c:
            raise _NodeError(f"A' has {ca} columns but B' has {c} rows")
    else:
        y = _shape_of(node, shapes, 0, "output", output=True)
        if y is None or len(y) != 2:
            raise _NodeError(f"no shape for its input A {node.input[0]!r} or output {node.output[0]!r}")
        rows = _known(y, node.output[0], batch_axis=True)[0]
    return Layer(name=name, K=n, C=c, B=rows, kind="fc")


def _matmul(node, shapes: dict, name: str, consts: frozenset[str] = frozenset()) -> tuple[Layer, int]:
    """The layer of a MatMul node (NumPy semantics) and its repeat: rules 3 and 4 of the module
    docstring (``consts``: the constant tensors)."""
    sa = _shape_of(node, shapes, 0, "input A")
    sb = _shape_of(node, shapes, 1, "input B")
    for s, t, what in ((sa, node.input[0], "A"), (sb, node.input[1], "B")):
        if s is None:
            raise _NodeError(f"no shape for its input {what} {t!r}")
    assert sa is not None and sb is not None  # both checked just above
    sa = _known(sa, node.input[0], batch_axis=len(sa) > 1)
    sb = _known(sb, node.input[1], batch_axis=len(sb) > 2)
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise _NodeError(f"inner sizes differ: A {list(sa)} x B {list(sb)}")
    ba, bb = a2[:-2], b2[:-2]
    nb = max(len(ba), len(bb))
    ba, bb = (1,) * (nb - len(ba)) + ba, (1,) * (nb - len(bb)) + bb
    if any(p != q and 1 not in (p, q) for p, q in zip(ba, bb)):
        raise _NodeError(f"batch axes do not broadcast: A {list(sa)} x B {list(sb)}")
    out_batch = math.prod(max(p, q) for p, q in zip(ba, bb))
    g = math.prod(bb)
    rows = out_batch // g * a2[-2]
    if node.input[0] not in consts and node.input[1] not in consts:   # rule 4: attention
        return Layer(name=name, K=b2[-1], C=a2[-1], B=rows, kind="matmul", w_role="kv_cache"), g
    kind = "conv" if g > 1 else "matmul" if len(sa) >= 3 else "fc"
    return Layer(name=name, K=b2[-1], C=a2[-1], B=rows, G=g, kind=kind), 1


def _layer(node, view: GraphView, name: str) -> tuple[Layer, int]:
    """The layer of a Conv / Gemm / MatMul node and its repeat."""
    if node.op_type == "MatMul":
        return _matmul(node, view.shapes, name, view.consts)
    return (_conv if node.op_type == "Conv" else _gemm)(node, view.shapes, name), 1


def _kv_source(view: GraphView, tensor: str, graph_inputs: frozenset[str]) -> int | None:
    """The position of the MatMul / Gemm node whose output reaches ``tensor`` through rule 5's
    nodes only, else None."""
    for _ in range(len(view.nodes)):
        j = view.producer.get(tensor)
        if j is None or view.nodes[j].domain not in ("", "ai.onnx"):
            return None
        node = view.nodes[j]
        if node.op_type in ("MatMul", "Gemm"):
            return j
        if node.op_type in _KV_PASS:
            tensor = node.input[0]
            continue
        if node.op_type not in ("Add", "Sub", "Mul", "Div", "Concat"):
            return None
        acts = [t for t in node.input if t and t not in view.consts
                and (node.op_type != "Concat" or t not in graph_inputs)]
        if len(acts) != 1:
            return None
        tensor = acts[0]
    return None


def _mark_kv(view: GraphView, layers: list[Layer], at: dict[int, int], graph_inputs: frozenset[str]) -> None:
    """Rule 5, in place: ``o_role = "kv_cache"`` on the weight layers that attention reads as K or V
    (``at``: node position -> index in ``layers``)."""
    for i, li in at.items():
        if layers[li].w_role != "kv_cache":
            continue
        j = _kv_source(view, view.nodes[i].input[1], graph_inputs)
        if j is not None and j in at and view.nodes[j].input[1] in view.consts:
            layers[at[j]] = layers[at[j]].with_(o_role="kv_cache")


def _opset(model) -> int:
    """The default domain's opset version (the newest onnx knows if the file imports none)."""
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    import onnx
    return int(onnx.defs.onnx_opset_version())


def read_onnx(path: str | os.PathLike) -> OnnxImport:
    """Read an ONNX model: one layer per Conv / Gemm / MatMul node, one vector op per arithmetic
    node or fused pattern between them, every other node ignored (module docstring).

    Raises:
        OnnxError: (a ValueError) an unreadable file, not an ONNX model, failed shape inference, no layer node,
            or a node we cannot turn into a layer (unknown shapes, a 3-D conv, inconsistent
            sizes); the message names the file and the node.
    """
    p = Path(path)
    model = _load_model(p)
    graph = model.graph
    view = graph_view(graph, _shapes(graph), _opset(model))
    layer_at = {i for i, n in enumerate(graph.node) if n.domain in ("", "ai.onnx") and n.op_type in LAYER_OPS}
    specs, _, reasons = vector_specs(view, layer_at)
    layers: list[Layer] = []
    reps: list[int] = []
    at: dict[int, int] = {}
    vops: list[VectorOp] = []
    nodes: list[tuple[str, str]] = []
    vnodes: list[tuple[str, str]] = []
    ignored: list[tuple[str, str]] = []
    why: list[str] = []
    used: set[str] = set()
    for i, node in enumerate(graph.node):
        label = node.name or f"{node.op_type}#{i}"
        if i in reasons:
            ignored.append((label, node.op_type))
            why.append(reasons[i])
        if i not in layer_at and i not in specs:
            continue
        name = label if label not in used else f"{label}#{i}"
        used.add(name)
        if i in specs:
            sp = specs[i]
            vops.append(VectorOp(name, sp.op, sp.elements, sp.inputs, sp.rows))
            vnodes.append((label, sp.op_type))
            continue
        try:
            layer, rep = _layer(node, view, name)
        except (_NodeError, ValueError) as e:
            raise OnnxError(f"{p}: node {label!r} ({node.op_type}): {e}") from None
        at[i] = len(layers)
        layers.append(layer)
        reps.append(rep)
        nodes.append((label, node.op_type))
    if not layers:
        raise OnnxError(f"{p}: no Conv, Gemm or MatMul node (ignored: "
                         f"{sorted({op for _, op in ignored + vnodes})})")
    _mark_kv(view, layers, at, frozenset(t.name for t in graph.input) - {t.name for t in graph.initializer})
    source = f"ONNX file {p.name}" + (f" ({model.producer_name} {model.producer_version})".rstrip()
                                      if model.producer_name else "")
    net = Network(p.stem, tuple(layers), tuple(reps), source, tuple(vops))
    return OnnxImport(net, tuple(nodes), tuple(ignored), tuple(vnodes), tuple(why))


def load_onnx(path: str | os.PathLike) -> Network:
    """The network of an ONNX file (see `read_onnx`); raises OnnxError naming the file and node."""
    return read_onnx(path).network
