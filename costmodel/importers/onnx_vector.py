"""The vector operations of an ONNX graph: the part of `costmodel.importers.onnx` that turns the
nodes between the layers into `costmodel.workload.VectorOp` s, or says why a node is not costed.

The rules are stated in `costmodel.importers.onnx`'s docstring (rules 6 and 7); this module is
their code. `GraphView` is what the rules look at (shapes, which tensors are constants, who
produces and who consumes each tensor); `vector_specs` applies them to every node that is not a
layer and returns one `VectorSpec` per vector operation, placed at the node that produces its
output, the nodes a fused operation absorbed, and one reason per node left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["GraphView", "VectorSpec", "graph_view", "vector_specs", "DATA_OPS"]

#: Operators that move, reshape, select or create data without arithmetic worth a vector op.
DATA_OPS = frozenset({
    "Reshape", "Transpose", "Gather", "GatherElements", "GatherND", "Concat", "Split", "Slice",
    "Shape", "Size", "Unsqueeze", "Squeeze", "Cast", "CastLike", "Flatten", "Identity", "Expand",
    "Tile", "Pad", "Constant", "ConstantOfShape", "Dropout", "Range", "Where", "ScatterND",
    "ScatterElements", "DepthToSpace", "SpaceToDepth", "NonZero", "Trilu", "EyeLike", "OneHot"})

#: Row-wise operators -> `VectorOp.op`.
_ROW_OPS = {"Softmax": "softmax", "LayerNormalization": "layernorm", "RMSNormalization": "rmsnorm",
            "SimplifiedLayerNormalization": "rmsnorm"}
#: Element-wise operators -> `VectorOp.op` (a subtraction costs as an add, a division by a
#: constant as a multiply by its reciprocal).
_ELEMENTWISE = {"Add": "add", "Sub": "add", "Mul": "mul", "Div": "mul"}
#: Domains read: the default ONNX domain; ``com.microsoft`` only for SimplifiedLayerNormalization.
_DEFAULT_DOMAINS = ("", "ai.onnx")
_INT_TYPES = ("INT4", "INT8", "INT16", "INT32", "INT64", "UINT4", "UINT8", "UINT16", "UINT32",
              "UINT64", "BOOL", "STRING")
_SQRT2 = math.sqrt(2.0)

_Shape = tuple  # of int | None


@dataclass(frozen=True)
class GraphView:
    """What the vector rules see of a graph (tensor names as keys; node positions in graph order).

    ``consts``: tensors known before inference (initializers, Constant outputs, and outputs of
    nodes whose inputs are all constants); ``ints``: tensors of an integer, bool or string element
    type; ``scalars``: the value of one-element float / int constants stored in the file;
    ``opset``: the default domain's opset version (Softmax's axis rule changed at 13)."""

    nodes: tuple
    shapes: dict[str, _Shape]
    consts: frozenset[str]
    ints: frozenset[str]
    scalars: dict[str, float]
    producer: dict[str, int]
    consumers: dict[str, tuple[int, ...]]
    outputs: frozenset[str]
    opset: int

    def sole_consumer(self, tensor: str) -> int | None:
        """The one node reading ``tensor`` (None if several, none, or a graph output)."""
        c = self.consumers.get(tensor, ())
        return c[0] if len(set(c)) == 1 and tensor not in self.outputs else None

    def node_of(self, tensor: str, op_type: str) -> int | None:
        """The position of the ``op_type`` node (default domain) producing ``tensor``, if any."""
        j = self.producer.get(tensor)
        if j is None or self.nodes[j].op_type != op_type or self.nodes[j].domain not in _DEFAULT_DOMAINS:
            return None
        return j


@dataclass(frozen=True)
class VectorSpec:
    """One vector operation found at a node: `VectorOp` fields but the name, and ``op_type``, the
    ONNX op type of its node (``+``-joined op types in graph order for a fused pattern)."""

    op: str
    elements: int
    inputs: int
    rows: int
    op_type: str


def _scalar(t) -> float | None:
    """The value of a one-element tensor stored in the file, else None (never reads external data)."""
    from onnx import TensorProto, numpy_helper
    if math.prod(t.dims) != 1 or t.data_location == TensorProto.EXTERNAL:
        return None
    try:
        return float(numpy_helper.to_array(t).reshape(-1)[0])
    except Exception:  # an element type numpy cannot hold: not a scalar we need
        return None


def _int_types(graph) -> frozenset[str]:
    from onnx import TensorProto
    codes = {TensorProto.DataType.Value(n) for n in _INT_TYPES if n in TensorProto.DataType.keys()}
    out = {vi.name for vi in list(graph.input) + list(graph.output) + list(graph.value_info)
           if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in codes}
    return frozenset(out | {t.name for t in graph.initializer if t.data_type in codes})


def graph_view(graph, shapes: dict[str, _Shape], opset: int) -> GraphView:
    """The `GraphView` of an ONNX GraphProto whose shapes (``shapes``) are already collected."""
    from onnx import helper
    consts = {t.name for t in graph.initializer}
    scalars = {t.name: v for t in graph.initializer if (v := _scalar(t)) is not None}
    producer: dict[str, int] = {}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        for t in node.input:
            if t:
                consumers.setdefault(t, []).append(i)
        for t in node.output:
            producer[t] = i
        ins = [t for t in node.input if t]
        if node.op_type == "Constant" or (ins and all(t in consts for t in ins)):
            consts.update(node.output)
        if node.op_type == "Constant" and node.attribute:
            a = node.attribute[0]
            v = helper.get_attribute_value(a)
            val = _scalar(v) if a.name == "value" else float(v) if a.name in ("value_float", "value_int") else None
            if val is not None:
                scalars[node.output[0]] = val
    return GraphView(tuple(graph.node), shapes, frozenset(consts), _int_types(graph), scalars, producer,
                     {k: tuple(v) for k, v in consumers.items()}, frozenset(o.name for o in graph.output), opset)


def known_dims(shape: _Shape | None) -> tuple[int, ...] | None:
    """``shape`` with an unknown axis 0 counted as 1 (the batch), or None if another size is unknown."""
    if shape is None:
        return None
    dims = list(shape)
    if dims and dims[0] is None:
        dims[0] = 1
    if any(d is None or d < 0 for d in dims):
        return None
    return tuple(dims)


# ----------------------------------------------------------------------------- fused patterns


def _near(v: float | None, target: float) -> bool:
    return v is not None and abs(v - target) <= 1e-3 * abs(target)


def _scaled(view: GraphView, j: int, value: float, divide: bool) -> str | None:
    """The data input of node ``j`` when it is ``x / value`` (``divide``) or ``x * value``."""
    node = view.nodes[j]
    if len(node.input) != 2:
        return None
    a, b = node.input
    if divide:
        return a if _near(view.scalars.get(b), value) else None
    if _near(view.scalars.get(b), value):
        return a
    return b if _near(view.scalars.get(a), value) else None


def _silu(view: GraphView, i: int) -> tuple[int, ...] | None:
    """``Mul(x, Sigmoid(x))`` ending at Mul node ``i`` (the sigmoid read by this Mul only)."""
    node = view.nodes[i]
    if node.op_type != "Mul" or len(node.input) != 2:
        return None
    for x, s in ((node.input[0], node.input[1]), (node.input[1], node.input[0])):
        j = view.node_of(s, "Sigmoid")
        if j is not None and view.nodes[j].input[0] == x and view.sole_consumer(s) == i:
            return (j, i)
    return None


def _erf_head(view: GraphView, e: int) -> tuple[str, list[int]] | None:
    """``1 + Erf(x / sqrt 2)`` (or ``x * (1 / sqrt 2)``) around Erf node ``e``: (x, [nodes])."""
    j = view.producer.get(view.nodes[e].input[0])
    if j is None or view.sole_consumer(view.nodes[j].output[0]) != e:
        return None
    op = view.nodes[j].op_type
    x = _scaled(view, j, _SQRT2, True) if op == "Div" else _scaled(view, j, 1 / _SQRT2, False) if op == "Mul" else None
    erf_out = view.nodes[e].output[0]
    a = view.sole_consumer(erf_out)
    if x is None or a is None or view.nodes[a].op_type != "Add" or _scaled(view, a, 1.0, False) != erf_out:
        return None
    return x, [j, e, a]


def _gelu_erf(view: GraphView, e: int) -> tuple[int, ...] | None:
    """GELU as ``x * 0.5 * (1 + Erf(x / sqrt 2))`` around Erf node ``e``, its Muls in any order:
    the ``1 + Erf`` tensor multiplied, one single-reader Mul after another, by x (directly or as
    ``x * c``) and by constants whose product with c is 0.5. The nodes, the output's last."""
    head = _erf_head(view, e)
    if head is None:
        return None
    x, nodes = head
    cur, factor, has_x = view.nodes[nodes[-1]].output[0], 1.0, False
    for _ in range(3):
        m = view.sole_consumer(cur)
        if m is None or view.nodes[m].op_type != "Mul" or view.nodes[m].domain not in _DEFAULT_DOMAINS:
            return None
        ins = list(view.nodes[m].input)
        other = ins[1] if ins[0] == cur else ins[0]
        h = view.node_of(other, "Mul")
        if other == x and not has_x:
            has_x = True
        elif other in view.scalars:
            factor *= view.scalars[other]
        elif (h is not None and not has_x and view.sole_consumer(other) == m
              and len(view.nodes[h].input) == 2 and x in view.nodes[h].input):
            c = [t for t in view.nodes[h].input if t != x]
            if len(c) != 1 or c[0] not in view.scalars:
                return None
            factor *= view.scalars[c[0]]
            has_x = True
            nodes.append(h)
        else:
            return None
        nodes.append(m)
        cur = view.nodes[m].output[0]
        if has_x and _near(factor, 0.5):
            return tuple(nodes)
    return None


# ----------------------------------------------------------------------------- single nodes


def _rows(view: GraphView, node, attrs: dict, dims: tuple[int, ...]) -> int | None:
    """Rows a row-wise op reduces over: the product of the axes before ``axis`` (Softmax from
    opset 13: every axis but ``axis``); None for an axis out of range."""
    softmax_13 = node.op_type == "Softmax" and view.opset >= 13
    axis = int(attrs.get("axis", 1 if node.op_type == "Softmax" and not softmax_13 else -1))
    ax = axis + len(dims) if axis < 0 else axis
    if not 0 <= ax < len(dims):
        return None
    if softmax_13:
        return math.prod(dims) // dims[ax] if dims[ax] else 1
    return math.prod(dims[:ax])


def _elementwise(view: GraphView, node) -> tuple[int, str | None]:
    """(input tensors read, None) of an Add / Sub / Mul / Div node, or (0, why it is not costed)."""
    ins = [t for t in node.input[:2] if t]
    if any(t in view.ints for t in list(node.output[:1]) + ins):
        return 0, "integer arithmetic (shapes or indices)"
    acts = [t for t in ins if t not in view.consts]
    if not acts:
        return 0, "computes from constants only (folded before inference)"
    if node.op_type == "Div" and len(ins) == 2 and ins[1] not in view.consts:
        return 0, "a division by an activation: no vector op (a reciprocal and a multiply)"
    return len(acts), None


def _out_dims(view: GraphView, node) -> tuple[int, ...] | None:
    """The output's known dims; for an unknown output, the inputs' (broadcast) shape."""
    out = known_dims(view.shapes.get(node.output[0])) if node.output else None
    if out is not None:
        return out
    dims = [known_dims(view.shapes.get(t)) for t in node.input[:2] if t]
    if node.op_type in _ROW_OPS or node.op_type == "Gelu":
        dims = dims[:1]
    ins = [d for d in dims if d is not None]
    if not ins or len(ins) < len(dims):
        return None
    import numpy as np
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*ins))
    except ValueError:
        return None


def _token_rows(dims: tuple[int, ...]) -> int:
    """The rows of an element-wise op's output (every dim but the last: one per token, as the zoo
    counts them; a GPU runs such a kernel one CTA per row, `costmodel.gpu.kernels.vector_ctas`)."""
    return max(1, math.prod(dims[:-1])) if len(dims) > 1 else 1


def _single(view: GraphView, i: int) -> VectorSpec | str:
    """The vector op of node ``i`` alone, or the reason it is not costed."""
    from onnx import helper
    node = view.nodes[i]
    op = node.op_type
    if node.domain not in _DEFAULT_DOMAINS and not (node.domain == "com.microsoft"
                                                      and op == "SimplifiedLayerNormalization"):
        return f"an operator of domain {node.domain!r}: not read"
    if op in DATA_OPS:
        return "moves, reshapes, selects or creates data: no arithmetic to cost"
    if op in ("Sigmoid", "Tanh"):
        return (f"a lone {op}: no vector op computes it (a sigmoid is costed inside SiLU, "
                "x * sigmoid(x), when its Mul reads it)")
    if op not in _ROW_OPS and op not in _ELEMENTWISE and op != "Gelu":
        return f"no vector op for {op}"
    inputs = 1
    if op in _ELEMENTWISE:
        inputs, why = _elementwise(view, node)
        if why is not None:
            return why
    dims = _out_dims(view, node)
    if dims is None or math.prod(dims) < 1:
        return f"output shape unknown or empty ({view.shapes.get(node.output[0]) if node.output else None})"
    elements = math.prod(dims)
    if op == "Gelu":
        return VectorSpec("gelu", elements, 1, _token_rows(dims), op)
    if op in _ELEMENTWISE:
        return VectorSpec(_ELEMENTWISE[op], elements, inputs, _token_rows(dims), op)
    attrs: dict[str, Any] = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    rows = _rows(view, node, attrs, dims)
    if rows is None:
        return f"axis {attrs.get('axis')} out of range for its output shape {list(dims)}"
    return VectorSpec(_ROW_OPS[op], elements, 1, rows, op)


def vector_specs(view: GraphView, layers: set[int]) -> tuple[dict[int, VectorSpec], set[int], dict[int, str]]:
    """The vector operations of the nodes that are not ``layers`` (positions).

    Returns:
        (specs by the position of the node producing each op's output, the positions of the other
        nodes of fused patterns, the reason for every other node that is not costed).
    """
    specs: dict[int, VectorSpec] = {}
    absorbed: set[int] = set()
    for i, node in enumerate(view.nodes):
        if node.domain not in _DEFAULT_DOMAINS or i in layers:
            continue
        pattern = _gelu_erf(view, i) if node.op_type == "Erf" else _silu(view, i) if node.op_type == "Mul" else None
        if pattern is None or any(p in layers or p in absorbed or p in specs
                                  or view.nodes[p].domain not in _DEFAULT_DOMAINS for p in pattern):
            continue
        end = pattern[-1]
        dims = known_dims(view.shapes.get(view.nodes[end].output[0]))
        if dims is None or math.prod(dims) < 1:
            continue
        op_type = "+".join(view.nodes[p].op_type for p in sorted(pattern))
        specs[end] = VectorSpec("gelu" if node.op_type == "Erf" else "silu", math.prod(dims), 1, _token_rows(dims),
                                op_type)
        absorbed.update(p for p in pattern if p != end)
    reasons: dict[int, str] = {}
    for i in range(len(view.nodes)):
        if i in layers or i in absorbed or i in specs:
            continue
        got = _single(view, i)
        if isinstance(got, VectorSpec):
            specs[i] = got
        else:
            reasons[i] = got
    return specs, absorbed, reasons
