"""The vector unit: the cost of the operations between a transformer's matmuls (`VectorOp`:
softmax, layernorm, rmsnorm, GELU, SiLU, RoPE, element-wise multiply and add).

An accelerator's vector unit (`VectorUnit`, TOML table ``[vector]`` of a loop-nest accelerator,
`costmodel.loopnest.arch`) has ``lanes`` lanes, each doing one primitive operation per cycle, of
three classes: ``add`` (add, subtract, compare, max), ``mul`` and ``special`` (exp, reciprocal,
rsqrt, tanh; one special takes ``special_cycles`` lane-cycles). What each op costs per element is
`OP_PRIMITIVES`, each count derived from the op's formula.

`vector_cost` costs one execution of one op by these rules:

(a) the data: it reads ``inputs x elements x bits`` and writes ``elements x bits`` (bits =
    ``op.bits``, else the accelerator's ``[precision] I``, else 8); an op fused into the matmul that
    produces its input (``in_flight`` > 0) reads only its other inputs and writes nothing (its
    output is the producer's, already written), and touches no memory at all when it has no other
    input (``memory`` "-"). A norm's gain / bias, RoPE's
    cos / sin tables and a softmax's row statistics are not counted as tensors (`VectorOp`).
(b) where they live: one home per tensor, the one the layers around the op use. The loop-nest
    model's layers read their inputs from and write their outputs to the outermost level serving
    I and O (the DRAM; TPU v1's unified buffer, its DRAM holding weights only, whose capacity the
    step's footprint checks, `costmodel.capacity`), so an op reads and writes there too, even when
    the previous op just wrote its input (no
    fusion: each operation a kernel of its own, through memory, as AccelForge's unfused mappings
    keep every tensor in main memory). Except an op whose tensors a fused group keeps on chip
    (``onchip``: fused attention's online softmax, rescale and normalisation, whose tile layers
    declare the scores and the partial output `Layer.onchip`): the innermost memory level that
    serves both I and O, is shared (``private_to`` empty: one instance, not per PE) and holds the
    op's inputs and output at once (``size_bits >= (inputs + 1) x elements x bits``; unbounded
    holds anything), else that home.
(c) memory energy (pJ) = ceil(read_bits / word_bits) x read_pj + ceil(write_bits / word_bits) x
    write_pj; transfer cycles = read_bits / read_bw + write_bits / write_bw if the level has one
    port shared by reads and writes (``shared_port``), else the larger of the two.
(d) compute: ops = elements x (add + mul + special) + rows x (per-row specials); compute_pj = the
    sum of count x energy of each class; compute_cycles = ceil((elements x (add + mul) + specials x
    special_cycles) / lanes), specials = elements x special + rows x per-row specials.
(e) latency (cycles) = max(compute_cycles, transfer_cycles): the unit streams its operands,
    double-buffered, so the slower of compute and transfer sets the time. `vector_totals` adds a
    network's ops one after another; which of them overlap the matmuls (``VectorOp.overlaps``) is
    the step's latency rule, `costmodel.llm.step_latency`.

``dram_bits``: the bits moved at the outermost level (read + write), 0 when the op's tensors live on
chip. These rules are a first-order model: fusion only as ``in_flight`` says (an op fused into its
producer's drain, `costmodel.transformer.attention`), no cost for the per-row scalar arithmetic beyond the
one special (a sum divided by d).

Errors: ValueError for an accelerator without a vector unit (`vector_cost`), and for bad
``[vector]`` keys or values (`VectorUnit.from_dict`, naming the file, the key and the value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from .workload import Network, VectorOp

__all__ = ["Primitives", "OP_PRIMITIVES", "activations_home", "VectorUnit", "VectorCost", "vector_cost", "network_vector_costs",
           "vector_totals", "DEFAULT_SOURCE"]


class Primitives(NamedTuple):
    """Primitive operations of one op: ``add``, ``mul``, ``special`` per element (counts), and
    ``row_special`` specials per row (the reciprocal of a softmax's sum, a norm's rsqrt)."""

    add: int
    mul: int
    special: int
    row_special: int = 0


#: Per element of each `costmodel.workload.VECTOR_OPS` op (x = the element, d = the row length).
OP_PRIMITIVES: dict[str, Primitives] = {
    # softmax(s / sqrt(d)): scale the score by 1/sqrt(d) (mul), running max (compare: add),
    # subtract the max (add), exp (special), sum the exps (add), multiply by 1/sum (mul);
    # per row: one reciprocal of the sum.
    "softmax": Primitives(add=3, mul=2, special=1, row_special=1),
    # x * rsqrt(mean(x^2) + eps) * g: square (mul), accumulate (add), normalise (mul), gain (mul);
    # per row: one rsqrt (the division by d and the eps are per-row scalars, not counted).
    "rmsnorm": Primitives(add=1, mul=3, special=0, row_special=1),
    # (x - mean) * rsqrt(var + eps) * g + b: accumulate for the mean (add), subtract it (add),
    # square (mul), accumulate for the variance (add), normalise (mul), gain (mul), bias (add);
    # per row: one rsqrt.
    "layernorm": Primitives(add=4, mul=3, special=0, row_special=1),
    # GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): x^2, x^3, 0.044715 x^3
    # (3 mul), x + ... (add), * sqrt(2/pi) (mul), tanh (special), 1 + ... (add), * x, * 0.5 (2 mul).
    "gelu": Primitives(add=2, mul=6, special=1),
    # SiLU x * sigmoid(x) = x * 1 / (1 + exp(-x)): exp (special; the negation is a sign flip),
    # 1 + ... (add), reciprocal (special), * x (mul).
    "silu": Primitives(add=1, mul=1, special=2),
    # sigmoid 1 / (1 + exp(-x)): exp (special), 1 + ... (add), reciprocal (special): SiLU without
    # its multiply by x (DeepSeek-V3's router scores, Qwen2-MoE's shared-expert gate).
    "sigmoid": Primitives(add=1, mul=0, special=2),
    # soft-capping c * tanh(x / c) (Gemma 2's attention scores and final logits): x / c (mul by
    # the reciprocal), tanh (special), x c (mul).
    "softcap": Primitives(add=0, mul=2, special=1),
    # RoPE, per output element of a rotated pair: x1 cos - x2 sin (2 mul, 1 subtract); the cos / sin
    # tables are precomputed.
    "rope": Primitives(add=1, mul=2, special=0),
    # the online softmax of a fused attention tile (FlashAttention, Dao et al., NeurIPS 2022, Alg. 1):
    # scale by 1/sqrt(d) (mul), the tile's running max (compare: add), subtract it (add), exp
    # (special), the running sum (add); per row of the tile: exp(m_old - m_new), the factor that
    # rescales the partial output and sum (one special). The division by the sum moves to the output
    # (rows x head_dim multiplies per query tile, a `mul` op of its own), the rescaling of the partial
    # output to a `mul` op per tile after the first.
    "online_softmax": Primitives(add=3, mul=1, special=1, row_special=1),
    # element-wise product (a gated FFN's up * gate) and sum (a residual connection).
    "mul": Primitives(add=0, mul=1, special=0),
    "add": Primitives(add=1, mul=0, special=0),
}

#: Where the default energies come from (`VectorUnit.source`).
DEFAULT_SOURCE = ("Horowitz, 'Computing's energy problem', ISSCC 2014, 45 nm: FP16 add 0.4 pJ, FP16 mul "
                  "1.1 pJ; special (exp / reciprocal / rsqrt / tanh) = range reduction + degree-4 polynomial "
                  "= 4 mul + 4 add = 6.0 pJ, 4 lane-cycles: our estimate from Horowitz's figures, not a "
                  "measured unit")

_INTS = ("lanes", "special_cycles", "bits")
_ENERGIES = ("add_pj", "mul_pj", "special_pj", "lane_area_pes")


@dataclass(frozen=True)
class VectorUnit:
    """An accelerator's vector unit.

    Attributes:
        lanes: primitive operations per cycle (count).
        add_pj, mul_pj, special_pj: energy of one primitive operation of each class (pJ). Defaults:
            FP16 add 0.4 pJ and FP16 multiply 1.1 pJ (Horowitz, ISSCC 2014, 45 nm); a special
            (exp / reciprocal / rsqrt / tanh) evaluated by range reduction and a degree-4
            polynomial = 4 mul + 4 add = 6.0 pJ: our estimate derived from Horowitz's figures, not
            a measured unit.
        special_cycles: lane-cycles one special operation takes (default 4: the polynomial's four
            Horner multiply-add steps, one per cycle; our estimate).
        bits: the datapath precision (bits), for documentation: the energies are per operation at
            this precision, whatever the precision of the tensors in memory.
        lane_area_pes: the area of one lane in PEs of the accelerator's array (so it follows the
            array's technology; `costmodel.loopnest.physics.design_area_mm2`); 0 = the unit's area
            is not counted (every preset but llm_ws: their rows are unchanged).
        source: where the figures come from.

    Raises:
        ValueError: a count that is not a positive integer or an energy that is not a finite
            non-negative number, naming ``vector.<key>`` and the value.
    """

    lanes: int
    add_pj: float = 0.4
    mul_pj: float = 1.1
    special_pj: float = 6.0
    special_cycles: int = 4
    bits: int = 16
    source: str = DEFAULT_SOURCE
    lane_area_pes: float = 0.0

    def __post_init__(self) -> None:
        for k in _INTS:
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer() or v < 1:
                raise ValueError(f"vector.{k} = {v!r}: expected a positive integer")
            object.__setattr__(self, k, int(v))
        for k in _ENERGIES:
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"vector.{k} = {v!r}: expected a finite non-negative number (pJ)")
            object.__setattr__(self, k, float(v))
        if not isinstance(self.source, str):
            raise ValueError(f"vector.source = {self.source!r}: expected a string")

    @classmethod
    def from_dict(cls, d: Any, src: str = "<dict>") -> "VectorUnit":
        """The unit of a ``[vector]`` table (keys: the attributes; ``lanes`` required, the others
        default as documented above).

        Raises:
            ValueError: ``{src}: vector.<key> = <value>: expected ...`` for an unknown key, a missing
                ``lanes`` or a bad value.
        """
        known = [f.name for f in fields(cls)]
        if not isinstance(d, dict):
            raise ValueError(f"{src}: vector = {d!r}: expected a table with the keys {known}")
        for k in d:
            if k not in known:
                raise ValueError(f"{src}: vector.{k} = {d[k]!r}: expected no such key; known keys: {known}")
        if "lanes" not in d:
            raise ValueError(f"{src}: vector.lanes = None: expected a positive integer (primitive ops per "
                             f"cycle)")
        try:
            return cls(**d)
        except ValueError as e:
            raise ValueError(f"{src}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """The ``[vector]`` table (inverse of `from_dict`; ``lane_area_pes`` only where counted)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "lane_area_pes" or self.lane_area_pes}

    def sustains(self, head_dim: int, macs_per_cycle: int) -> dict[str, float]:
        """What the unit sustains against an array of ``macs_per_cycle`` MACs per cycle on
        attention with ``head_dim``: score elements per cycle of the online softmax
        (`OP_PRIMITIVES`; lanes / (adds + muls + special x special_cycles) per element, per-row work
        left out), of the array (macs_per_cycle / head_dim: one score element is head_dim MACs), and
        their ratio (< 1: the vector unit sets attention's time)."""
        p = OP_PRIMITIVES["online_softmax"]
        unit = self.lanes / (p.add + p.mul + p.special * self.special_cycles)
        array = macs_per_cycle / head_dim
        return {"vector_elements_per_cycle": unit, "array_elements_per_cycle": array, "ratio": unit / array}


class _Level(Protocol):
    """What `vector_cost` reads of a memory level (`costmodel.loopnest.arch.MemoryLevel`)."""

    @property
    def name(self) -> str: ...
    @property
    def size_bits(self) -> int | None: ...
    @property
    def operands(self) -> tuple[str, ...]: ...
    @property
    def read_pj(self) -> float: ...
    @property
    def write_pj(self) -> float: ...
    @property
    def word_bits(self) -> int: ...
    @property
    def read_bw(self) -> float: ...
    @property
    def write_bw(self) -> float: ...
    @property
    def shared_port(self) -> bool: ...
    @property
    def private_to(self) -> tuple[str, ...]: ...


class _Arch(Protocol):
    """What `vector_cost` reads of an accelerator (`costmodel.loopnest.arch.Accelerator`)."""

    @property
    def name(self) -> str: ...
    @property
    def memories(self) -> Sequence[_Level]: ...
    @property
    def precisions(self) -> Mapping[str, int]: ...
    @property
    def vector(self) -> VectorUnit | None: ...


@dataclass(frozen=True)
class VectorCost:
    """The cost of one execution of one `VectorOp` (rules in the module docstring).

    energy_pj = compute_pj + memory_pj (pJ); latency_cycles = max(compute_cycles, transfer_cycles)
    (cycles); memory: the name of the level its tensors live in; read_bits / write_bits: bits read
    and written there; dram_bits: read + write bits at the outermost level, 0 on chip; ops: primitive
    operations (count).
    """

    energy_pj: float
    compute_pj: float
    memory_pj: float
    latency_cycles: float
    compute_cycles: int
    transfer_cycles: float
    memory: str
    read_bits: int
    write_bits: int
    dram_bits: int
    ops: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _no_unit(arch: _Arch) -> str:
    return (f"accelerator {arch.name!r} has no vector unit: declare one with a [vector] table in its TOML "
            f"(lanes = <primitive ops per cycle>; add_pj, mul_pj, special_pj, special_cycles default to "
            f"Horowitz's FP16 figures)")


def activations_home(arch: _Arch) -> _Level:
    """Where activations live: the outermost level serving I and O (the DRAM; TPU v1's unified
    buffer, its DRAM holding weights only), for matmuls and vector operations alike."""
    return next((m for m in reversed(arch.memories) if "I" in m.operands and "O" in m.operands), arch.memories[-1])


def _level(op: VectorOp, arch: _Arch, bits: int) -> _Level:
    """Rule (b): the activations' home, the outermost level serving I and O (the DRAM, or where the
    DRAM holds weights only, TPU v1's unified buffer: the level the matmuls read their inputs from
    and write their outputs to); for an ``onchip`` op, the innermost shared level serving I and O
    that holds inputs and output at once (those it reads and writes: not the ones in flight), else
    that home."""
    home = activations_home(arch)
    if not op.onchip:
        return home
    need = (op.inputs - op.in_flight + (0 if op.in_flight else 1)) * op.elements * bits
    for m in arch.memories:
        if ("I" in m.operands and "O" in m.operands and not m.private_to
                and (m.size_bits is None or m.size_bits >= need)):
            return m
    return home


def vector_cost(op: VectorOp, arch: _Arch) -> VectorCost:
    """Energy (pJ) and latency (cycles) of one execution of ``op`` on ``arch``'s vector unit, its
    tensors read from and written to one memory level (module docstring, rules a-e).

    ``arch``: any accelerator with ``memories`` (innermost first), ``precisions`` and ``vector``
    (`costmodel.loopnest.arch.Accelerator`).

    Raises:
        ValueError: ``arch.vector`` is None (the message says how to declare a vector unit).
    """
    unit = arch.vector
    if unit is None:
        raise ValueError(_no_unit(arch))
    bits = op.bits if op.bits is not None else int(arch.precisions.get("I", 8))
    read_bits = (op.inputs - op.in_flight) * op.elements * bits
    write_bits = 0 if op.in_flight else op.elements * bits
    m = _level(op, arch, bits)
    memory_pj = (math.ceil(read_bits / m.word_bits) * m.read_pj
                 + math.ceil(write_bits / m.word_bits) * m.write_pj)
    t_read, t_write = read_bits / m.read_bw, write_bits / m.write_bw
    transfer = t_read + t_write if m.shared_port else max(t_read, t_write)
    name = m.name if read_bits + write_bits else "-"  # a fused op touching no memory
    p = OP_PRIMITIVES[op.op]
    adds, muls = op.elements * p.add, op.elements * p.mul
    specials = op.elements * p.special + op.rows * p.row_special
    compute_pj = adds * unit.add_pj + muls * unit.mul_pj + specials * unit.special_pj
    compute_cycles = math.ceil((adds + muls + specials * unit.special_cycles) / unit.lanes)
    dram = read_bits + write_bits if m is arch.memories[-1] else 0
    return VectorCost(energy_pj=compute_pj + memory_pj, compute_pj=compute_pj, memory_pj=memory_pj,
                      latency_cycles=float(max(compute_cycles, transfer)), compute_cycles=compute_cycles,
                      transfer_cycles=transfer, memory=name, read_bits=read_bits, write_bits=write_bits,
                      dram_bits=dram, ops=adds + muls + specials)


def network_vector_costs(network: Network, arch: _Arch) -> list[dict[str, Any]]:
    """One row per vector op of ``network``: name, op, repeat, elements, energy_pj (pJ, one
    execution), latency_cycles (cycles, one execution; on a GPU preset the kernel's time without
    its fixed part, `costmodel.gpu.kernels.vector_time`), memory (level name), dram_bits (one
    execution). [] when ``arch`` has no vector unit (`vector_totals` then says what was left out)
    or the network has no vector ops."""
    if arch.vector is None:
        return []
    gpu = getattr(arch, "gpu", None) is not None
    rows = []
    for op, rep in zip(network.vector_ops, network.vector_repeats):
        c = vector_cost(op, arch)
        lat = c.latency_cycles
        if gpu:   # the kernel as a GPU runs it, less the device's fixed time (counted per launch)
            from .gpu.kernels import vector_ctas, vector_time
            k = vector_time(c, arch, vector_ctas(op))
            lat = max(lat, (k.time_s - k.fixed_s) * getattr(arch, "clock_mhz") * 1e6)
        rows.append({"name": op.name, "op": op.op, "repeat": rep, "elements": op.elements,
                     "energy_pj": c.energy_pj, "latency_cycles": lat, "memory": c.memory,
                     "dram_bits": c.dram_bits})
    return rows


def vector_totals(rows: list[dict[str, Any]], network: Network | None = None,
                  arch: _Arch | None = None) -> dict[str, Any]:
    """The vector ops' share of one inference: energy_pj (pJ), latency_cycles (cycles; the ops run
    one after another) and dram_bits, each a row's figure x its repeat, summed.

    With ``network`` and ``arch`` given and ``arch`` without a vector unit, the network's vector ops
    are not costed: the figures are 0 (left out, not free), ``costed`` False and ``not_costed`` a
    message naming the ops and their elements per inference (for the CLI to print). Otherwise
    ``costed`` is True and ``not_costed`` "".
    """
    out: dict[str, Any] = {
        "energy_pj": float(sum(r["energy_pj"] * r["repeat"] for r in rows)),
        "latency_cycles": float(sum(r["latency_cycles"] * r["repeat"] for r in rows)),
        "dram_bits": int(sum(r["dram_bits"] * r["repeat"] for r in rows)),
        "costed": True, "not_costed": ""}
    if network is not None and arch is not None and arch.vector is None and network.vector_ops:
        per_op: dict[str, int] = {}
        for op, rep in zip(network.vector_ops, network.vector_repeats):
            per_op[op.op] = per_op.get(op.op, 0) + op.elements * rep
        listed = ", ".join(f"{k} {v:,} elements" for k, v in per_op.items())
        out.update(costed=False, not_costed=(
            f"network {network.name!r}: {len(network.vector_ops)} vector ops not costed ({listed} per "
            f"inference): {_no_unit(arch)}"))
    return out
