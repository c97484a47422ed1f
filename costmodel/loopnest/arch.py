"""Accelerator descriptions for the loop-nest model: operational array + memory hierarchy.

An `Accelerator` is an operational array of MAC units (named array dims, e.g. ``{"D1": 14,
"D2": 12}``; MAC energy in pJ), the datapath precisions, a default spatial unrolling and a list of
`MemoryLevel` s **innermost first**. Each memory serves a subset of the operands W, I, O; the
memories serving one operand, innermost first, are its levels (`Accelerator.levels`). This follows
ZigZag's hardware description (Mei et al., IEEE TC 2021; ``zigzag/inputs/hardware/*.yaml``):
capacity in bits, per-access read/write energy for one word of ``word_bits``, port bandwidth in
bits per cycle, and which array dims a memory is replicated over (ZigZag's ``served_dimensions``
is the complement: a per-PE register file is private to all array dims, a global buffer to none).

TOML format (presets in ``costmodel/presets/*.toml``; user files alike)::

    name = "my_acc"
    mac_pj = 0.5                          # energy of one MAC, pJ
    [array]                               # array dims and their sizes
    D1 = 14
    D2 = 12
    [precision]                           # optional datapath precisions in bits (else the layer's)
    W = 8
    I = 8
    O = 16                                # partial sums
    O_final = 8
    [spatial]                             # default spatial unrolling
    D1 = [["OX", 14]]
    D2 = [["FY", 3], ["K", 4]]
    [spatial_hint]                        # optional: the unrollings the interconnect supports
    D1 = ["OX", "OY"]                     # (`costmodel.loopnest.hint`); searched per layer by the
    D2 = ["FY", "K"]                      # mappers with spatial = "search"
    max_dims = 2
    [accumulator]                         # optional: an accumulator inside each MAC
    energy_pj = 0.1                       # pJ per accumulation (per MAC updating it); may be 0.0
    [[memory]]                            # innermost first
    name = "rf_64B_A"
    size_bits = 512                       # or size_kib = 0.0625; omit both for unbounded (DRAM)
    operands = ["I"]
    read_pj = 1.0                         # per access of one word
    write_pj = 1.5
    word_bits = 8                         # port width; read_bw / write_bw default to it
    read_bw = 8                           # bits per cycle
    write_bw = 8
    shared_port = false                   # true: one port shared by reads and writes
    private_to = "all"                    # or a list of array dims, or [] (one instance)
    # per-operand ports: word_bits, read_bw, write_bw, read_pj, write_pj may each be a table with a
    # value for every operand of the memory, e.g. word_bits = { I = 512, W = 512, O = 2048 }
    # optional, top level (before the tables): multicast = { I = ["D1", "D2"] }  (see below)
    [vector]                              # optional: the vector unit (`costmodel.vector.VectorUnit`)
    lanes = 32                            # primitive ops per cycle; add_pj, mul_pj, special_pj
                                          # (pJ), special_cycles, bits, source default as documented

Without an ``[accumulator]`` table the MAC has no place to keep a partial sum: after every MAC
the partial sum is written to the lowest memory level serving O (and read back before the next
accumulation into the same output). With it, the MAC keeps its partial sum while O-irrelevant
loops run innermost and each MAC costs ``energy_pj`` more (`costmodel.loopnest.reference`). An
accumulation buffer that is a real memory (capacity, word, ports) is a ``[[memory]]`` level
serving O, not an ``[accumulator]``.

**Per-operand ports.** A memory whose operands reach it through ports of different widths (ZigZag's
gemm_l1_l3 ``l1``: 512-bit ports for I and W, 2048 bits for O) gives any of ``word_bits``,
``read_bw``, ``write_bw``, ``read_pj``, ``write_pj`` as a table with one value per operand
(`MemoryLevel.port`; the rule in `costmodel.loopnest.reference`, "Per-operand ports"). A scalar
means what it always meant: the same value for every operand. The memory's scalar attributes
then hold the largest per-operand value (what models with one value per memory read: roofline,
CoSA, the vector unit); a table whose values are all equal is the scalar (same repr, same ids).

**Multicast of inputs across array dims.** ``multicast = { I = ["D1", "D2"] }`` (a top-level key)
says the array's interconnect delivers one input read to every PE that needs it along those array
dims (Eyeriss's row-stationary NoC: input rows shared along the array's diagonals): a read of the
memory feeding them counts the distinct inputs of the PEs (or lower instances) along those dims,
not one tile per PE (`costmodel.loopnest.reference`, "Multicast of inputs"). Only ``I``: W and O
tiles of PEs that differ along relevant loops never overlap, and along irrelevant ones they are
already shared. Without the key nothing changes (same repr, same ids).

Errors: `load_accelerator` raises ValueError naming the file, the key and the bad value.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..vector import VectorUnit
from .hint import SpatialHint
from .mapping import OPERANDS, SpatialMapping, MappingError

__all__ = ["MemoryLevel", "Port", "Accelerator", "load_accelerator", "list_accelerators", "accelerator_from_dict", "dram_level",
           "multicast_table"]

_PRESET_DIR = Path(__file__).parent.parent / "presets"
_LOOP_PRESETS = ("eyeriss_like", "simba_like", "tpu_like", "tpu_v1", "llm_ws", "a100", "tpu_v4", "a100_pcie", "h100",
                 "h200", "b200", "mi300x", "l40s", "rtx4090", "rtx_pro_6000", "tpu_v5e", "tpu_v6e")


class Port(NamedTuple):
    """What one operand sees of a memory (`MemoryLevel.port`): word width (bits), read / write
    bandwidth (bits per cycle per instance), energy of one word read / written (pJ)."""

    word_bits: int
    read_bw: float
    write_bw: float
    read_pj: float
    write_pj: float


_PORT_KEYS = Port._fields


@dataclass(frozen=True)
class MemoryLevel:
    """One memory of the hierarchy.

    Attributes:
        name: unique name.
        size_bits: capacity of one instance in bits; None = unbounded (DRAM).
        operands: the operands it stores, a subset of ("W", "I", "O").
        read_pj, write_pj: energy of one access of one word (pJ).
        word_bits: width of one access (bits).
        read_bw, write_bw: bandwidth of one instance in bits per cycle.
        shared_port: True if reads and writes share one port (their times add).
        private_to: array dims this memory is replicated over (one instance per index of each);
            all dims = per PE, () = one instance for the whole array.
        per_operand: () or one (operand, word_bits, read_bw, write_bw, read_pj, write_pj) per
            operand, in ``operands``' order (per-operand ports, the module docstring); with it the
            scalar attributes are set to the largest value of each column, and rows all equal are
            dropped (the scalar form). Left out of the repr when empty.
    """

    name: str
    size_bits: int | None
    operands: tuple[str, ...]
    read_pj: float
    write_pj: float
    word_bits: int
    read_bw: float
    write_bw: float
    shared_port: bool = False
    private_to: tuple[str, ...] = ()
    per_operand: tuple = field(default=(), repr=False)

    def __post_init__(self) -> None:
        rows = tuple(tuple(r) for r in self.per_operand)
        if not rows:
            return
        if [r[0] for r in rows] != list(self.operands) or any(len(r) != 6 for r in rows):
            raise ValueError(f"memory {self.name!r}: per_operand {rows!r}: expected one (operand, word_bits, read_bw, "
                             f"write_bw, read_pj, write_pj) per operand, in the order {list(self.operands)}")
        for k, col in zip(_PORT_KEYS, zip(*(r[1:] for r in rows))):
            object.__setattr__(self, k, max(col))
        same = all(r[1:] == rows[0][1:] for r in rows)
        object.__setattr__(self, "per_operand", () if same else rows)

    def port(self, op: str) -> Port:
        """Word width, bandwidths and energies per word of operand ``op`` at this memory: its
        per-operand row, else the scalar attributes."""
        for r in self.per_operand:
            if r[0] == op:
                return Port(*r[1:])
        return Port(self.word_bits, self.read_bw, self.write_bw, self.read_pj, self.write_pj)

    @property
    def unbounded(self) -> bool:
        return self.size_bits is None


_auto_repr = MemoryLevel.__repr__


def _memory_repr(self: MemoryLevel) -> str:
    """The dataclass repr (part of problem ids), unchanged for memories without per-operand ports."""
    return _auto_repr(self) if not self.per_operand else f"{_auto_repr(self)[:-1]}, per_operand={self.per_operand!r})"


MemoryLevel.__repr__ = _memory_repr  # type: ignore[method-assign, assignment]


@dataclass(frozen=True)
class Accelerator:
    """An operational array and its memory hierarchy (memories innermost first).

    ``precisions`` maps "W", "I", "O" (partial sums) and "O_final" to bits; missing keys fall back
    to the layer's precisions. ``spatial`` is the default spatial unrolling. ``accumulator_pj``:
    energy (pJ) of one accumulation in an accumulator inside each MAC, or None = no accumulator
    (every partial sum goes to the lowest O memory level; TOML table ``[accumulator]``).
    ``spatial_hint``: the unrollings the array supports (`SpatialHint`), or None; it is left out
    of ``repr`` (the repr identifies an accelerator in problem ids, and a hint only matters to a
    search of spatial unrollings, whose ids add it). ``vector``: the vector unit that runs the
    operations between the matmuls (`costmodel.vector`; TOML table ``[vector]``), or None; also left
    out of ``repr``, so the problem ids and config hashes of the matmuls do not change with it.
    """

    name: str
    array: dict[str, int]
    mac_pj: float
    memories: tuple[MemoryLevel, ...]
    spatial: SpatialMapping = field(default_factory=SpatialMapping)
    precisions: dict[str, int] = field(default_factory=dict)
    clock_mhz: float = 200.0
    description: str = ""
    accumulator_pj: float | None = None
    spatial_hint: SpatialHint | None = field(default=None, repr=False)
    vector: VectorUnit | None = field(default=None, repr=False)
    # the technology model of a template (`costmodel.loopnest.physics.TECHS`; TOML ``tech``) and the
    # DRAM's (kind, units) when it is of a kind (TOML ``[dram]``, `costmodel.tech.dram`): left out
    # of the repr, which already holds what they set (the memories' energies, bandwidths)
    tech: str | None = field(default=None, repr=False)
    dram: tuple[str, int] | None = field(default=None, repr=False)
    # ((operand, array dims), ...) whose reads the interconnect multicasts (module docstring, TOML
    # ``multicast``); in the repr only when set (the ids of accelerators without it unchanged)
    multicast: tuple = field(default=(), repr=False)
    # what the DRAM of a kind delivers when it is not the grade's peak (TOML ``[dram]
    # gbps_per_unit``, ``sustained``; `costmodel.tech.dram.dram_bits_per_cycle`): left out of the repr,
    # whose DRAM level already holds the bandwidth they set
    dram_gbps_per_unit: float | None = field(default=None, repr=False)
    dram_sustained: float = field(default=1.0, repr=False)
    dram_gib_per_unit: float | None = field(default=None, repr=False)   # capacity of one unit, GiB
    # a fixed cost per kernel launch (one operation or one fused group), microseconds (TOML
    # ``launch_overhead_us``; `costmodel.llm.step_launches`): a step's figure, not a layer's, so
    # left out of the repr (the matmuls' problem ids do not depend on it)
    launch_overhead_us: float = field(default=0.0, repr=False)
    # a GPU's execution and power figures and its default chip-to-chip link (TOML ``[gpu]``,
    # ``[power]``, ``interconnect``; `costmodel.gpu.spec`), and the array at narrower operands
    # (``[array_by_bits]``, already applied to ``array``): step figures, left out of the repr
    gpu: Any = field(default=None, repr=False)
    power: Any = field(default=None, repr=False)
    interconnect: str | None = field(default=None, repr=False)
    array_by_bits: dict | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "memories", tuple(self.memories))
        pj = self.accumulator_pj
        if pj is not None and (isinstance(pj, bool) or not isinstance(pj, (int, float)) or not math.isfinite(pj)
                               or pj < 0):
            raise ValueError(f"accelerator {self.name!r}: accumulator.energy_pj = {pj!r}: expected a finite "
                             f"non-negative number")
        names = [m.name for m in self.memories]
        if len(set(names)) != len(names):
            raise ValueError(f"accelerator {self.name!r}: duplicate memory names {names}")
        for op in OPERANDS:
            lv = self.levels(op)
            if not lv:
                raise ValueError(f"accelerator {self.name!r}: no memory serves operand {op}")
            for lo, hi in zip(lv, lv[1:]):
                if not set(hi.private_to) <= set(lo.private_to):
                    raise ValueError(f"accelerator {self.name!r}: memory {hi.name!r} (private_to "
                                     f"{list(hi.private_to)}) sits above {lo.name!r} (private_to "
                                     f"{list(lo.private_to)}) for {op}; an upper level may not be "
                                     f"replicated over more array dims than the level below")
        for m in self.memories:
            for a in m.private_to:
                if a not in self.array:
                    raise ValueError(f"accelerator {self.name!r}: memory {m.name!r} private_to unknown "
                                     f"array dim {a!r}; array dims are {list(self.array)}")
        mc = tuple((op, tuple(dims)) for op, dims in self.multicast)
        object.__setattr__(self, "multicast", mc)
        for op, dims in mc:
            if op != "I" or not dims or len(set(dims)) != len(dims) or any(a not in self.array for a in dims):
                raise ValueError(f"accelerator {self.name!r}: multicast.{op} = {list(dims)!r}: expected the operand I "
                                 f"with a non-empty list of distinct array dims from {list(self.array)}")
        for a in self.spatial.dims:
            if a not in self.array:
                raise ValueError(f"accelerator {self.name!r}: spatial unrolling on unknown array dim {a!r}")
            if self.spatial.array_fanout(a) > self.array[a]:
                raise ValueError(f"accelerator {self.name!r}: default spatial fan-out "
                                 f"{self.spatial.array_fanout(a)} on {a} exceeds its size {self.array[a]}")

    def for_layer(self, layer) -> "Accelerator":
        """The accelerator as ``layer`` sees it: unchanged, unless the layer keeps operands on chip
        (``layer.onchip``: a tile of a fused group, `costmodel.zoo.fusion`); then the outermost
        memory level (DRAM) no longer serves those operands, so they live in the outermost level
        below it that does, within its capacity. Idempotent (the result's for_layer is itself).

        Raises:
            ValueError: no other level serves an operand the layer keeps on chip (the accelerator
                cannot hold that tile on chip).
        """
        top = self.memories[-1]
        drop = tuple(o for o in getattr(layer, "onchip", ()) if o in top.operands)
        if not drop:
            return self
        keep = tuple(o for o in top.operands if o not in drop)
        for o in drop:
            if len(self.levels(o)) < 2:
                raise ValueError(f"accelerator {self.name!r}: layer {layer.name!r} keeps {o} on chip, but no memory "
                                 f"below {top.name!r} serves {o}")
        if not keep:  # the level serves nothing else for this layer
            return replace(self, memories=self.memories[:-1])
        rows = tuple(r for r in top.per_operand if r[0] in keep)
        return replace(self, memories=self.memories[:-1] + (replace(top, operands=keep, per_operand=rows),))

    def multicast_dims(self, op: str) -> tuple[str, ...]:
        """The array dims over which the interconnect multicasts operand ``op`` (() if none)."""
        return next((dims for o, dims in self.multicast if o == op), ())

    def levels(self, op: str) -> tuple[MemoryLevel, ...]:
        """Memories serving operand ``op`` ("W", "I" or "O"), innermost first."""
        return tuple(m for m in self.memories if op in m.operands)

    @property
    def pe_count(self) -> int:
        """Number of MAC units: product of the array dim sizes."""
        return math.prod(self.array.values())

    def memory(self, name: str) -> MemoryLevel:
        for m in self.memories:
            if m.name == name:
                return m
        raise KeyError(f"accelerator {self.name!r} has no memory {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """The TOML-shaped dict (inverse of `accelerator_from_dict`)."""
        mems = []
        for m in self.memories:
            d = {"name": m.name, "operands": list(m.operands), "read_pj": m.read_pj, "write_pj": m.write_pj,
                 "word_bits": m.word_bits, "read_bw": m.read_bw, "write_bw": m.write_bw,
                 "shared_port": m.shared_port, "private_to": list(m.private_to)}
            if m.size_bits is not None:
                d["size_bits"] = m.size_bits
            for j, k in enumerate(_PORT_KEYS, 1):   # per-operand ports: a table where the operands differ
                if len({r[j] for r in m.per_operand}) > 1:
                    d[k] = {r[0]: r[j] for r in m.per_operand}
            mems.append(d)
        d = {"name": self.name, "description": self.description, "mac_pj": self.mac_pj,
             "clock_mhz": self.clock_mhz, "array": dict(self.array), "precision": dict(self.precisions),
             "spatial": self.spatial.to_dict(), "memory": mems}
        if self.accumulator_pj is not None:
            d["accumulator"] = {"energy_pj": self.accumulator_pj}
        if self.spatial_hint is not None:
            d["spatial_hint"] = self.spatial_hint.to_dict()
        if self.vector is not None:
            d["vector"] = self.vector.to_dict()
        if self.tech is not None:
            d["tech"] = self.tech
        if self.dram is not None:
            dram: dict[str, Any] = {"kind": self.dram[0], "units": self.dram[1]}
            if self.dram_gbps_per_unit is not None:
                dram["gbps_per_unit"] = self.dram_gbps_per_unit
            if self.dram_sustained != 1.0:
                dram["sustained"] = self.dram_sustained
            if self.dram_gib_per_unit is not None:
                dram["gib_per_unit"] = self.dram_gib_per_unit
            d["dram"] = dram
        if self.launch_overhead_us:
            d["launch_overhead_us"] = self.launch_overhead_us
        if self.multicast:
            d["multicast"] = {op: list(dims) for op, dims in self.multicast}
        for k in ("gpu", "power"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k).to_dict()
        if self.interconnect is not None:
            d["interconnect"] = self.interconnect
        if self.array_by_bits is not None:
            d["array_by_bits"] = {k: dict(v) for k, v in self.array_by_bits.items()}
        return d


_acc_repr = Accelerator.__repr__


def _accelerator_repr(self: Accelerator) -> str:
    """The dataclass repr (part of problem ids), unchanged for accelerators without multicast."""
    return _acc_repr(self) if not self.multicast else f"{_acc_repr(self)[:-1]}, multicast={self.multicast!r})"


Accelerator.__repr__ = _accelerator_repr  # type: ignore[method-assign, assignment]


def _check_buildable(src: str, arr: dict[str, int], clock: float) -> None:
    """`costmodel.tech.limits.check_array_dim` of every array dim and ``check_clock``, the error
    naming ``src`` and the key."""
    from costmodel.tech.limits import check_array_dim, check_clock
    for a, v in arr.items():
        try:
            check_array_dim(a, v)
        except ValueError as e:
            raise ValueError(f"{src}: array.{a} = {v!r}: {e}") from None
    try:
        check_clock(clock)
    except ValueError as e:
        raise ValueError(f"{src}: clock_mhz = {clock!r}: {e}") from None


def _bad(src: str, key: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"{src}: {key} = {value!r}: expected {expected}")


def _num(src, key, v, *, positive=True, integer=False):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    if integer:
        ok = ok and float(v).is_integer()
    if ok and positive and v <= 0:
        ok = False
    if ok and not positive and v < 0:
        ok = False
    if not ok:
        raise _bad(src, key, v, ("a positive " if positive else "a non-negative ") + ("integer" if integer else "number"))
    if not math.isfinite(v):   # TOML's nan and inf: no cost, size or bandwidth is either
        raise _bad(src, key, v, "a finite " + ("positive" if positive else "non-negative") + " number")
    return int(v) if integer else float(v)


def accelerator_from_dict(d: dict[str, Any], src: str = "<dict>") -> Accelerator:
    """Build an `Accelerator` from the TOML-shaped dict (see the module docstring).

    Raises:
        ValueError: naming ``src``, the key path and the bad value.
    """
    known = {"name", "description", "mac_pj", "clock_mhz", "array", "precision", "spatial", "spatial_hint", "memory",
             "accumulator", "tech", "dram", "vector", "multicast", "launch_overhead_us", "gpu", "power",
             "interconnect", "array_by_bits"}
    for k in d:
        if k not in known:
            raise _bad(src, k, d[k], f"no such key; known keys: {sorted(known)}")
    name = d.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(src, "name", name, "a non-empty string")
    array = d.get("array")
    if not isinstance(array, dict) or not array:
        raise _bad(src, "array", array, "a table of array dims, e.g. {D1 = 14, D2 = 12}")
    arr = {str(a): _num(src, f"array.{a}", v, integer=True) for a, v in array.items()}
    mac_pj = _num(src, "mac_pj", d.get("mac_pj"), positive=False)
    prec = d.get("precision", {})
    if not isinstance(prec, dict):
        raise _bad(src, "precision", prec, "a table with keys W, I, O, O_final")
    precisions = {}
    for k, v in prec.items():
        if k not in ("W", "I", "O", "O_final"):
            raise _bad(src, f"precision.{k}", v, "one of the keys W, I, O, O_final")
        precisions[k] = _num(src, f"precision.{k}", v, integer=True)
    from ..gpu.spec import by_bits_table, gpu_tables
    by_bits, arr = by_bits_table(d, arr, precisions, src)
    try:
        spatial = SpatialMapping.from_dict(d.get("spatial", {}))
    except MappingError as e:
        raise ValueError(f"{src}: spatial: {e}") from None
    mems_raw = d.get("memory")
    if not isinstance(mems_raw, list) or not mems_raw:
        raise _bad(src, "memory", mems_raw, "a list of [[memory]] tables, innermost first")
    mem_keys = {"name", "size_bits", "size_kib", "operands", "read_pj", "write_pj", "word_bits", "read_bw",
                "write_bw", "shared_port", "private_to"}
    mems = []
    for i, m in enumerate(mems_raw):
        where = f"memory[{i}]"
        if not isinstance(m, dict):
            raise _bad(src, where, m, "a table")
        for k in m:
            if k not in mem_keys:
                raise _bad(src, f"{where}.{k}", m[k], f"no such key; known keys: {sorted(mem_keys)}")
        mname = m.get("name")
        if not isinstance(mname, str) or not mname:
            raise _bad(src, f"{where}.name", mname, "a non-empty string")
        where = f"memory[{i}] ({mname})"
        if "size_bits" in m and "size_kib" in m:
            raise _bad(src, f"{where}.size_kib", m["size_kib"], "either size_bits or size_kib, not both")
        size = None
        if "size_bits" in m:
            size = _num(src, f"{where}.size_bits", m["size_bits"], integer=True)
        elif "size_kib" in m:
            kib = _num(src, f"{where}.size_kib", m["size_kib"])
            size = round(kib * 8192)
        ops = m.get("operands")
        if (not isinstance(ops, list) or not ops or any(o not in OPERANDS for o in ops)
                or len(set(ops)) != len(ops)):
            raise _bad(src, f"{where}.operands", ops, f"a non-empty list of distinct operands from {list(OPERANDS)}")
        word, rbw, wbw, rpj, wpj, per_op = _ports(src, where, m, ops)
        sp = m.get("shared_port", False)
        if not isinstance(sp, bool):
            raise _bad(src, f"{where}.shared_port", sp, "true or false")
        pt = m.get("private_to", [])
        if pt == "all":
            pt = list(arr)
        if not isinstance(pt, list) or any(a not in arr for a in pt):
            raise _bad(src, f"{where}.private_to", pt, f"\"all\" or a list of array dims from {list(arr)}")
        mems.append(MemoryLevel(mname, size, tuple(ops), rpj, wpj, word, rbw, wbw, sp, tuple(a for a in arr if a in pt),
                                per_op))
    desc = d.get("description", "")
    clock = _num(src, "clock_mhz", d.get("clock_mhz", 200.0))
    _check_buildable(src, arr, clock)
    acc_pj = None
    if "accumulator" in d:
        acc = d["accumulator"]
        if not isinstance(acc, dict):
            raise _bad(src, "accumulator", acc, "a table with the key energy_pj")
        for k in acc:
            if k != "energy_pj":
                raise _bad(src, f"accumulator.{k}", acc[k], "no such key; known keys: ['energy_pj']")
        v = acc.get("energy_pj")
        if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isfinite(v)):
            raise _bad(src, "accumulator.energy_pj", v, "a finite non-negative number")
        acc_pj = _num(src, "accumulator.energy_pj", v, positive=False)
    hint = SpatialHint.from_dict(d["spatial_hint"], arr, src) if "spatial_hint" in d else None
    vector = VectorUnit.from_dict(d["vector"], src) if "vector" in d else None
    tech, dram, mems, rate = _tech_dram(d, mems, clock, src)
    mc = multicast_table(d.get("multicast", {}), arr, src)
    launch = _num(src, "launch_overhead_us", d.get("launch_overhead_us", 0.0), positive=False)
    try:
        return Accelerator(name, arr, mac_pj, tuple(mems), spatial, precisions, clock, str(desc), acc_pj, hint,
                           vector, tech, dram, mc, rate[0], rate[1], rate[2], launch, *gpu_tables(d, src, clock),
                           by_bits)
    except ValueError as e:
        raise ValueError(f"{src}: {e}") from None


def multicast_table(mc: Any, arr: dict, src: str) -> tuple:
    """The ``multicast`` table ``mc`` (TOML ``multicast = { I = [...] }``) as ((operand, array dims),
    ...) for an array ``arr`` (dim -> size): the key I only, each a non-empty list of distinct array
    dims. Raises ValueError naming ``src``, the key and the value."""
    if not isinstance(mc, dict):
        raise _bad(src, "multicast", mc, 'a table, e.g. multicast = { I = ["D1", "D2"] }')
    for op, dims in mc.items():
        if op != "I":
            raise _bad(src, f"multicast.{op}", dims, "the key I only (W and O tiles of PEs on different array "
                       "dims never overlap)")
        if (not isinstance(dims, list) or not dims or any(a not in arr for a in dims)
                or len(set(dims)) != len(dims)):
            raise _bad(src, f"multicast.{op}", dims, f"a non-empty list of distinct array dims from {list(arr)}")
    return tuple((op, tuple(dims)) for op, dims in mc.items())


def _ports(src: str, where: str, m: dict, ops: list) -> tuple:
    """(word_bits, read_bw, write_bw, read_pj, write_pj, per-operand rows) of a [[memory]] table:
    each key a number or a table with one number per operand (bandwidths default to the word)."""
    def value(key, v, op, **kw):
        if isinstance(v, dict):
            if set(v) != set(ops):
                raise _bad(src, f"{where}.{key}", v, f"a number or a table with one value per operand {ops}, "
                           f"e.g. {{{', '.join(f'{o} = 64' for o in ops)}}}")
            return _num(src, f"{where}.{key}.{op}", v[op], **kw)
        return _num(src, f"{where}.{key}", v, **kw)
    rows = []
    for op in ops:
        word = value("word_bits", m.get("word_bits"), op, integer=True)
        rows.append((op, word, value("read_bw", m.get("read_bw", word), op), value("write_bw", m.get("write_bw", word), op),
                     value("read_pj", m.get("read_pj"), op, positive=False),
                     value("write_pj", m.get("write_pj"), op, positive=False)))
    return (*rows[0][1:], tuple(rows) if any(isinstance(m.get(k), dict) for k in _PORT_KEYS) else ())


def dram_level(kind: str, units: int, clock_mhz: float, word_bits: int | None = None, name: str = "dram",
               operands: tuple[str, ...] = ("W", "I", "O"), gbps_per_unit: float | None = None,
               sustained: float = 1.0) -> MemoryLevel:
    """The DRAM of ``units`` units of ``kind`` as the outermost, unbounded memory level of an
    accelerator clocked at ``clock_mhz`` (`costmodel.tech.dram`'s module docstring).

    ``read_bw`` = ``write_bw`` = `dram_bits_per_cycle` (with ``gbps_per_unit`` and ``sustained``
    when given: a pin rate other than the grade's, the fraction of the peak sustained); ``word_bits`` defaults to
    `default_word_bits` of it; ``read_pj`` = ``write_pj`` = pJ/bit x ``word_bits``; one shared
    port, one instance.

    Raises:
        ValueError: naming the key and the value (dram, units, clock_mhz, word_bits, operands, name).
    """
    from costmodel.tech.dram import default_word_bits, dram_bits_per_cycle, dram_spec
    spec = dram_spec(kind)
    bw = dram_bits_per_cycle(kind, units, clock_mhz, gbps_per_unit, sustained)
    if word_bits is None:
        word_bits = default_word_bits(bw)
    elif isinstance(word_bits, bool) or not isinstance(word_bits, int) or word_bits <= 0:
        raise ValueError(f"word_bits = {word_bits!r}: expected a positive integer (bits per access) or None")
    ops = tuple(operands) if isinstance(operands, (tuple, list)) else operands
    if not isinstance(ops, tuple) or not ops or len(set(ops)) != len(ops) or any(o not in OPERANDS for o in ops):
        raise ValueError(f"operands = {operands!r}: expected a non-empty tuple of distinct operands from {list(OPERANDS)}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name = {name!r}: expected a non-empty string")
    pj = spec.pj_per_bit * word_bits
    return MemoryLevel(name, None, ops, pj, pj, word_bits, bw, bw, shared_port=True, private_to=())


def _tech_dram(d: dict[str, Any], mems: list, clock: float, src: str):
    """(``tech``, the DRAM's (kind, units) or None, the memories with the DRAM a ``[dram]`` table
    makes in place of (or after) the file's unbounded level) of the TOML-shaped dict ``d``."""
    tech = d.get("tech")
    from costmodel.tech import TECHS
    if tech is not None and tech not in TECHS:
        raise _bad(src, "tech", tech, f"one of {list(TECHS)} (omit it for the 65 nm table)")
    if "dram" not in d:
        return tech, None, mems, (None, 1.0, None)
    given = mems[-1] if mems and mems[-1].size_bits is None else None
    dram, top, rate = _dram(d["dram"], given, clock, src)
    return tech, dram, (mems[:-1] if given is not None else mems) + [top], rate


def _dram(table: Any, given: MemoryLevel | None, clock: float,
          src: str) -> tuple[tuple[str, int], MemoryLevel, tuple[float | None, float, float | None]]:
    """``[dram] kind = "hbm2e", units = 1`` (optional ``gbps_per_unit``, ``sustained``): (kind,
    units), the DRAM level they make at the clock (`costmodel.tech.dram.dram_level`), named and
    serving as ``given`` (the file's unbounded level, which must then agree with it: a design file
    written by a report) or ``dram`` serving W, I, O, and (gbps_per_unit or None, sustained,
    gib_per_unit or None).

    Raises:
        ValueError: a bad table, kind, count or rate (naming ``dram.<key>``), or a ``given`` level whose
            energy or bandwidth disagrees with the kind's.
    """
    from costmodel.tech.dram import DRAM_KINDS, dram_rate, dram_spec
    keys = {"kind", "units", "gbps_per_unit", "sustained", "gib_per_unit"}
    if not isinstance(table, dict) or set(table) - keys or "kind" not in table:
        raise _bad(src, "dram", table, f"a table {{kind = one of {list(DRAM_KINDS)}, units = N}} (optional "
                   "gbps_per_unit, sustained, gib_per_unit)")
    kind = table["kind"]
    if kind not in DRAM_KINDS:
        raise _bad(src, "dram.kind", kind, f"one of {list(DRAM_KINDS)}")
    units = table.get("units", dram_spec(kind).default_units)
    try:
        rate = (None if table.get("gbps_per_unit") is None else dram_rate("gbps_per_unit", table["gbps_per_unit"]),
                dram_rate("sustained", table.get("sustained", 1.0)),
                None if table.get("gib_per_unit") is None else dram_rate("gib_per_unit", table["gib_per_unit"]))
    except ValueError as e:
        raise ValueError(f"{src}: {e}") from None
    try:
        lv = dram_level(kind, units, clock, word_bits=given.word_bits if given else None,
                        name=given.name if given else "dram", operands=given.operands if given else ("W", "I", "O"),
                        gbps_per_unit=rate[0], sustained=rate[1])
    except ValueError as e:
        raise _bad(src, "dram.units", units, str(e)) from None
    if given is not None and not all(math.isclose(getattr(given, k), getattr(lv, k), rel_tol=1e-9)
                                     for k in ("read_pj", "write_pj", "read_bw", "write_bw")):
        raise _bad(src, f"memory ({given.name})", given.read_pj, f"the figures of [dram] {kind} x {units} at "
                   f"{clock:g} MHz (read_pj {lv.read_pj:g}, read_bw {lv.read_bw:g}); omit the unbounded level "
                   "to have it made from [dram]")
    return (kind, int(units)), lv, rate


def list_accelerators() -> list[str]:
    """Names of the loop-nest accelerator presets shipped in ``costmodel/presets``."""
    return [n for n in _LOOP_PRESETS if (_PRESET_DIR / f"{n}.toml").exists()]


def load_accelerator(name_or_path: str | Path) -> Accelerator:
    """A preset by name (see `list_accelerators`) or a user TOML file by path.

    Raises:
        ValueError: unknown preset / missing file, TOML syntax errors, or bad values (the message
            names the file, the key and the value).
    """
    s = str(name_or_path)
    if s in _LOOP_PRESETS:
        path = _PRESET_DIR / f"{s}.toml"
    else:
        path = Path(s)
        if not path.is_file():
            raise ValueError(f"unknown accelerator {s!r}: not a preset ({list_accelerators()}) and no such file")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: invalid TOML: {e}") from None
    return accelerator_from_dict(data, str(path))
