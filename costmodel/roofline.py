"""The roofline of a loop-nest accelerator: operational intensity, ridge point, attainable and
attained throughput, and the bound a layer cannot beat.

The roofline model (Williams, Waterman and Patterson, "Roofline: an insightful visual performance
model for multicore architectures", CACM 52(4), 2009): a kernel of operational intensity I
(operations per byte of DRAM traffic) on a machine of peak P (operations per second) and DRAM
bandwidth beta (bytes per second) attains at most min(P, I x beta); the ridge point P / beta is the
intensity where the two meet, memory-bound to its left, compute-bound to its right. Jouppi et al.,
"In-Datacenter Performance Analysis of a Tensor Processing Unit", ISCA 2017 (Sec. 4), apply it to
the TPU with integer multiply-accumulates as the operations and the bytes of weights read as the
traffic (Table 1's "ops/weight byte").

Here, on a loop-nest accelerator (`costmodel.loopnest.arch.Accelerator`), per clock cycle:

* operations are MACs (one multiply-accumulate = one operation, as Table 1 of Jouppi et al. counts
  them; a figure in "ops" counting the multiply and the add apart is twice ours);
* peak = ``arch.pe_count`` MACs per cycle (every PE busy);
* DRAM = the outermost memory level, which must be unbounded (``size_bits`` None); its bandwidth is
  its ``read_bw`` (bits per cycle) / 8 bytes per cycle;
* the bytes are all the DRAM traffic (reads and writes) of the operands whose outermost level is
  the DRAM: weights, inputs and outputs on tpu_like; the weights only on tpu_v1, whose activations
  live in its unified buffer (its DRAM is the TPU's Weight Memory), so there the intensity is the
  paper's MACs per weight byte (an 8-bit fully-connected layer at batch B: B). Where the activations
  go through the DRAM too, the intensity is below MACs per weight byte.
* the operands are those the DRAM serves *for the layer* (`Accelerator.for_layer`): a tile of a
  fused group keeps some on chip (fused attention, Dao et al., "FlashAttention", NeurIPS 2022,
  Algorithm 1: the score tile and the partial output never leave the chip, the K and V tiles are
  streamed from DRAM once per query tile), and their accesses at an on-chip level are no DRAM
  traffic. `dram_bits` is the one count of a mapping's DRAM traffic: the roofline here, the step's
  traffic by role (`costmodel.llm.dram_traffic`, which `sweep map` prints) and the report's
  rooflines (`sweep report`: text, JSON and HTML plot) all read it.

Units: intensity in MACs per DRAM byte, throughput in MACs per cycle, latency in cycles, bytes in
bytes. Nothing here searches: a mapping, when given, comes from a mapper (`sweep.commands.map_eval.map_layer`
and friends) and is costed by `costmodel.loopnest.reference.evaluate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping as _Mapping, Sequence

from costmodel.loopnest.mapping import OPERANDS, Mapping
from costmodel.loopnest.reference import evaluate, operand_bits
from costmodel.loopnest.window import footprint

__all__ = ["RooflinePoint", "dram_bytes_per_cycle", "dram_bits", "dram_bytes", "compulsory_bytes", "operational_intensity",
           "ridge_point", "roof", "attained", "bound_cycles", "roofline_points"]


def _dram(arch):
    """The outermost memory level of ``arch``; ValueError if it has a capacity (no DRAM)."""
    top = arch.memories[-1]
    if top.size_bits is not None:
        raise ValueError(f"accelerator {arch.name!r}: its outermost memory {top.name!r} has size_bits = "
                         f"{top.size_bits}: the roofline needs an unbounded outermost level (DRAM)")
    return top


def _served(view) -> tuple[str, ...]:
    """The operands whose outermost level is the DRAM on ``view`` (the accelerator as a layer sees
    it, `Accelerator.for_layer`; the others never leave the chip)."""
    top = _dram(view)
    return tuple(op for op in OPERANDS if view.levels(op)[-1] is top)


def dram_bytes_per_cycle(arch) -> float:
    """DRAM bandwidth in bytes per cycle: the outermost (unbounded) level's ``read_bw`` (bits per
    cycle) / 8. Raises ValueError if the outermost level is bounded."""
    return _dram(arch).read_bw / 8


def compulsory_bytes(layer, arch) -> float:
    """The DRAM bytes no mapping can avoid: every weight read once, every input read once, every
    output written once (final precision), at the accelerator's precisions
    (`costmodel.loopnest.reference.operand_bits`), for the operands the DRAM serves for this layer
    (`Accelerator.for_layer`: not a fused tile's on-chip ones). Inputs are the elements the layer
    reads (`costmodel.loopnest.window.footprint`: the rows and columns of its window that are
    read). Bytes = elements x bits / 8 (no rounding to DRAM words).

    Raises:
        ValueError: the outermost level is bounded, or the layer keeps on chip an operand no
            memory below the DRAM serves."""
    bits = operand_bits(layer, arch)
    prec = {"W": bits["W"], "I": bits["I"], "O": bits["O_final"]}
    dims = layer.dims()
    _dram(arch)
    view = arch.for_layer(layer)  # a tile that keeps every operand on chip drops the DRAM level
    served = _served(view) if view.memories[-1].size_bits is None else ()
    return sum(footprint(op, dims, layer) * prec[op] for op in served) / 8


def dram_bits(layer, arch, report) -> dict[str, float]:
    """The bits one execution of ``layer`` moves at the DRAM under the mapping ``report`` costs
    (a valid `costmodel.loopnest.reference.CostReport` of ``layer`` on ``arch``), per operand the
    DRAM serves for this layer (`Accelerator.for_layer`: a fused tile's on-chip operands, e.g. the
    score tile and partial output of fused attention, move nothing off chip): the word accesses
    (reads + writes) of the operand at the outermost level x the operand's word width there
    (``port(op).word_bits``; a word access moves a whole word, as the cost model counts it).
    ``{}`` when the outermost level is bounded (nothing is off chip). The one count of a mapping's
    DRAM traffic (module docstring). Keys "W", "I", "O"; values in bits.

    Raises:
        ValueError: ``report`` is invalid (its reason), or ``layer`` keeps on chip an operand no
            memory below the DRAM serves (`Accelerator.for_layer`).
    """
    if not report.valid:
        raise ValueError(f"layer {layer.name!r}: invalid mapping on {arch.name!r}: {report.reason}")
    view = arch.for_layer(layer)
    top = view.memories[-1]
    if top.size_bits is not None:
        return {}
    ops = report.breakdown["operands"]
    out = {}
    for op in _served(view):
        lv = ops[op][-1]
        out[op] = float((lv["reads"] + lv["writes"]) * top.port(op).word_bits)
    return out


def dram_bytes(layer, arch, mapping: Mapping | _Mapping[str, Any]) -> float:
    """The DRAM bytes ``mapping`` moves for one execution of ``layer``: `dram_bits` of its cost
    report (`costmodel.loopnest.reference.evaluate`), summed over the operands, / 8.

    Args:
        mapping: a `Mapping` or its dict form (`Mapping.to_dict`, as `sweep.commands.map_eval.map_layer` gives).

    Raises:
        ValueError: the mapping is invalid on ``arch`` (the cost model's reason), or the outermost
            level is bounded.
    """
    m = Mapping.from_dict(mapping) if isinstance(mapping, _Mapping) else mapping
    _dram(arch)  # a bounded outermost level: no DRAM, ValueError
    return sum(dram_bits(layer, arch, evaluate(layer, arch, m)).values()) / 8


def _bytes(layer, arch, mapping) -> float:
    return compulsory_bytes(layer, arch) if mapping is None else dram_bytes(layer, arch, mapping)


def operational_intensity(layer, arch, mapping: Mapping | _Mapping[str, Any] | None = None) -> float:
    """MACs per DRAM byte: ``layer.macs`` / the DRAM bytes of ``mapping`` (`dram_bytes`) or, without
    a mapping, / the compulsory bytes (`compulsory_bytes`); inf if no byte moves.

    Raises:
        ValueError: as `dram_bytes`.
    """
    b = _bytes(layer, arch, mapping)
    return layer.macs / b if b > 0 else math.inf


def ridge_point(arch) -> float:
    """The ridge point in MACs per DRAM byte: peak MACs per cycle (``arch.pe_count``) / DRAM bytes
    per cycle (`dram_bytes_per_cycle`). A layer of lower intensity is memory-bound. TPU v1:
    65,536 / (34e9 / 700e6) = 1,349.3 (Jouppi et al., ISCA 2017, Sec. 4: about 1,350)."""
    return arch.pe_count / dram_bytes_per_cycle(arch)


def roof(arch, intensity: float) -> float:
    """The attainable throughput in MACs per cycle at ``intensity`` (MACs per DRAM byte):
    min(peak, intensity x DRAM bytes per cycle).

    Raises:
        ValueError: ``intensity`` negative or NaN.
    """
    if not intensity >= 0:
        raise ValueError(f"roof: intensity = {intensity!r}: expected a non-negative number of MACs per byte")
    return min(float(arch.pe_count), intensity * dram_bytes_per_cycle(arch))


def attained(layer, arch, latency_cycles: float) -> float:
    """The attained throughput in MACs per cycle: ``layer.macs`` / ``latency_cycles`` (0.0 for an
    infinite latency: no valid mapping). ``arch`` is unused, there for a uniform signature.

    Raises:
        ValueError: ``latency_cycles`` not positive (or NaN).
    """
    if not latency_cycles > 0:
        raise ValueError(f"layer {layer.name!r}: latency_cycles = {latency_cycles!r}: expected a positive number")
    return layer.macs / latency_cycles


def bound_cycles(layer, arch, mapping: Mapping | _Mapping[str, Any] | None = None) -> float:
    """The roofline's lower bound on the latency in cycles: max(MACs / peak, DRAM bytes / DRAM bytes
    per cycle), the DRAM bytes those of ``mapping`` (`dram_bytes`) or, without one, the compulsory
    bytes (`compulsory_bytes`).

    Raises:
        ValueError: as `dram_bytes`.
    """
    return max(layer.macs / arch.pe_count, _bytes(layer, arch, mapping) / dram_bytes_per_cycle(arch))


@dataclass(frozen=True)
class RooflinePoint:
    """One layer on the roofline.

    ``intensity`` MACs per DRAM byte (of its mapping, else compulsory); ``attained`` and ``roof`` in
    MACs per cycle; ``bound`` "memory" (intensity below the ridge point) or "compute";
    ``bound_cycles`` and ``latency_cycles`` in cycles; ``dram_bytes`` in bytes; ``repeat`` how many
    times the layer runs per inference.
    """

    layer: str
    repeat: int
    macs: int
    dram_bytes: float
    intensity: float
    attained: float
    roof: float
    bound: str
    bound_cycles: float
    latency_cycles: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-able fields."""
        return dict(self.__dict__)


def roofline_points(network, arch, rows: Sequence[_Mapping[str, Any]]) -> list[RooflinePoint]:
    """Each unique layer of ``network`` (`Network.unique`, in order) on the roofline of ``arch``.

    Args:
        network: `costmodel.workload.Network`.
        arch: a loop-nest `Accelerator` with an unbounded outermost level.
        rows: one per unique layer, in order, each with ``latency_cycles`` (cycles) and ``mapping``
            (a `Mapping`, its dict form, or None: then the compulsory bytes), e.g. the ``layers`` of
            `sweep.commands.map_eval.map_network` (other keys are ignored).

    Raises:
        ValueError: a row count other than the unique layers', a row without ``latency_cycles``, a
            non-positive latency, or an invalid mapping.
    """
    net = network.unique()
    if len(rows) != len(net):
        raise ValueError(f"network {network.name!r}: {len(rows)} rows for {len(net)} unique layers")
    ridge = ridge_point(arch)
    out = []
    for (layer, rep), row in zip(net, rows):
        if "latency_cycles" not in row:
            raise ValueError(f"layer {layer.name!r}: row has no latency_cycles")
        lat = row["latency_cycles"]
        b = _bytes(layer, arch, row.get("mapping"))
        oi = layer.macs / b if b > 0 else math.inf
        out.append(RooflinePoint(layer.name, rep, layer.macs, b, oi, attained(layer, arch, lat), roof(arch, oi),
                                 "memory" if oi < ridge else "compute",
                                 max(layer.macs / arch.pe_count, b / dram_bytes_per_cycle(arch)), float(lat)))
    return out
