"""An accelerator template: named parameters whose values make new designs (architecture search).

`ArchTemplate` wraps a base `Accelerator` and exposes its sizes as named parameters:

* ``"array.<dim>"``: size of an array dim (positive int);
* ``"memory.<name>.size_bits"`` / ``"memory.<name>.size_kib"``: capacity of one instance of a
  bounded memory in bits (positive int) or KiB (positive number, ``size_kib * 8192`` a whole
  number of bits); at most one of the two per memory in one design;
* ``"memory.<name>.word_bits"``: word (port) width in bits (positive int), every memory incl. DRAM;
* ``"dataflow"`` (only when the template is given named ``dataflows``, `Dataflow`): the name of
  one of them. A *fixed* dataflow replaces the base's spatial unrolling (it is written for the
  base's array and follows each design's array by the rule below) and drops the base's hint; a
  *hint* dataflow gives the design an empty unrolling (``SpatialMapping({})``) and that
  `SpatialHint`, so the loop-order mappers search its unrolling per layer.

`ArchTemplate.design` applies any subset of them: memories are scaled with
`costmodel.loopnest.physics.scale_memory` (energies anchored at the template's own values,
bandwidth following the word width) and the default spatial unrolling follows the array: for each
array dim of the template's unrolling every factor but the last is kept and the last becomes
``floor(new size / product of the others)`` (an array dim of the base's size keeps its unrolling
as written). ``design({})`` returns the base's memories, spatial
unrolling and array unchanged (under the name ``<base>_design``). Designs are deterministic and
their ``repr`` is stable (plain Python ints and floats).

Errors (all ValueError subclasses):

* `BadDataflow` (attributes ``key``, ``value``, ``expected``): a dataflow definition that is not
  one (`Dataflow.from_dict`);
* `UnknownParameter`: a name that is not a parameter (the message lists the known names);
* ValueError: a value of the wrong type or sign, or size_kib and size_bits of one memory together;
* `costmodel.loopnest.physics.PhysicsRangeError`: a value outside the physics model;
* `InvalidDesign` (attribute ``reason``): a combination that makes no accelerator: "too small for
  one word", "spatial does not fit", "hierarchy order" (an upper level replicated over more array
  dims than a lower one), "invalid accelerator" (any other constructor error).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, cast

from costmodel.tech.limits import check_array_dim, check_clock

from .arch import Accelerator, MemoryLevel, multicast_table
from .hint import SpatialHint
from .mapping import SpatialMapping
from .physics import PhysicsRangeError, TooSmallForWord, check_size, design_area_mm2, scale_memory

__all__ = ["ArchTemplate", "BadDataflow", "CATEGORICAL", "CLOCK", "DATAFLOW", "DRAM_KIND", "DRAM_UNITS", "Dataflow",
           "InvalidDesign", "LANES", "UnknownParameter"]

#: The parameter naming a design's dataflow (`Dataflow`).
DATAFLOW = "dataflow"
#: The parameters of a template whose DRAM is of a kind (TOML ``[dram]``, `costmodel.tech.dram`):
#: the kind (a name: "lpddr5", "ddr5", "hbm2e", "hbm3"), its units (channels or stacks) and the
#: accelerator's clock (MHz; the DRAM's bits per cycle follow it, the MAC energy does not).
DRAM_KIND, DRAM_UNITS, CLOCK = "dram", "dram_units", "clock_mhz"
#: The parameter of a template with a vector unit (TOML ``[vector]``): its lanes.
LANES = "vector.lanes"
#: The parameters whose values are names, not numbers.
CATEGORICAL = (DATAFLOW, DRAM_KIND)
#: The key of a `ArchTemplate.design` memo holding the template it serves.
_MEMO_OWNER = ("template",)


class UnknownParameter(ValueError):
    """A parameter name the template does not have; the message lists the known names."""


class InvalidDesign(ValueError):
    """A combination of parameter values that makes no valid accelerator.

    Attributes:
        reason: short category, e.g. "too small for one word", "spatial does not fit",
            "hierarchy order", "invalid accelerator".
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        super().__init__(f"{reason}: {detail}" if detail else reason)


class BadDataflow(ValueError):
    """A dataflow definition that is not one.

    Attributes:
        key: dotted key of the bad value, e.g. ``"dataflows.ws.spatial"``.
        value: the value as given.
        expected: what was expected (the message after ``"key = value: "``).
    """

    def __init__(self, key: str, value: Any, expected: str) -> None:
        self.key, self.value, self.expected = key, value, expected
        super().__init__(f"{key} = {value!r}: {expected}")


@dataclass(frozen=True)
class Dataflow:
    """A named dataflow of an architecture search: exactly one of a fixed spatial unrolling
    ``spatial`` (written for the template's array) or a hint ``hint`` (searched per layer).

    TOML (a table of a campaign's ``[architectures.dataflows]``)::

        spatial = { D1 = [["C", 14]], D2 = [["K", 12]] }                       # fixed
        spatial_hint = { D1 = ["K", "C"], D2 = ["OX", "OY"], max_dims = 2 }    # or: searched
        multicast = { I = ["D1", "D2"] }                                       # optional

    ``multicast``: the array dims over which this dataflow's interconnect multicasts inputs (the
    accelerator key of the same name, `costmodel.loopnest.arch`, reference "Multicast of inputs"):
    a design of this dataflow takes it in place of the template's; () keeps the template's.
    """

    name: str
    spatial: SpatialMapping | None = None
    hint: SpatialHint | None = None
    multicast: tuple = ()

    @property
    def kind(self) -> str:
        """``"fixed"`` (a spatial unrolling) or ``"hint"`` (searched by the mappers)."""
        return "fixed" if self.spatial is not None else "hint"

    def to_dict(self) -> dict[str, Any]:
        """The TOML-shaped table: ``{"spatial": {...}}`` or ``{"spatial_hint": {...}}`` (inverse of
        `from_dict`; part of a design's identity)."""
        mc = {"multicast": {op: list(dims) for op, dims in self.multicast}} if self.multicast else {}
        if self.spatial is not None:
            return {"spatial": {a: [list(x) for x in v] for a, v in self.spatial.dims.items()}, **mc}
        assert self.hint is not None  # a dataflow has exactly one of spatial and hint (from_dict)
        return {"spatial_hint": self.hint.to_dict(), **mc}

    @classmethod
    def from_dict(cls, name: str, d: Any, base: Accelerator, prefix: str = "dataflows") -> "Dataflow":
        """Read the table ``d`` of dataflow ``name`` for the template accelerator ``base``.

        Raises:
            BadDataflow: key ``<prefix>.<name>`` when ``d`` is not a table with exactly one of
                ``spatial`` / ``spatial_hint``; ``<prefix>.<name>.spatial`` for a malformed or empty
                unrolling, or one that does not fit ``base``'s array (unknown array dim, fan-out
                above its size); ``<prefix>.<name>.spatial_hint`` with `SpatialHint.from_dict`'s
                message; ``<prefix>.<name>.multicast`` for a table that is not ``{ I = [array dims] }``.
        """
        key = f"{prefix}.{name}"
        if (not isinstance(d, Mapping) or set(d) - {"spatial", "spatial_hint", "multicast"}
                or len(set(d) & {"spatial", "spatial_hint"}) != 1):
            raise BadDataflow(key, d, "expected a table with exactly one of spatial (a fixed unrolling, "
                              "e.g. {D1 = [[\"C\", 14]]}) or spatial_hint (searched per layer, e.g. "
                              "{D1 = [\"K\", \"C\"], max_dims = 2}), and optionally multicast "
                              "(e.g. {I = [\"D1\", \"D2\"]})")
        mc: tuple = ()
        if "multicast" in d:
            try:
                mc = multicast_table(d["multicast"], dict(base.array), key)
            except ValueError as e:
                raise BadDataflow(f"{key}.multicast", d["multicast"], str(e)) from None
        if "spatial_hint" in d:
            try:
                return cls(name, hint=SpatialHint.from_dict(d["spatial_hint"], base.array, key), multicast=mc)
            except ValueError as e:
                raise BadDataflow(f"{key}.spatial_hint", d["spatial_hint"], str(e)) from None
        raw = d["spatial"]
        if not isinstance(raw, Mapping) or not any(raw.values()):
            raise BadDataflow(f"{key}.spatial", raw, "expected a non-empty table array dim -> [[loop dim, "
                              "factor], ...]; for an unrolling searched per layer give spatial_hint")
        try:
            sp = SpatialMapping.from_dict(raw)
            replace(base, spatial=sp, spatial_hint=None)
        except (TypeError, ValueError) as e:
            raise BadDataflow(f"{key}.spatial", raw, f"not an unrolling of template {base.name!r} "
                              f"(array {dict(base.array)}): {e}") from None
        return cls(name, spatial=sp, multicast=mc)


def _pos_int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{name} = {v!r}: expected a positive integer")
    return int(v)


def _kib_to_bits(name: str, v: Any) -> int:
    if (isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0):
        raise ValueError(f"{name} = {v!r}: expected a positive number of KiB")
    bits = float(v) * 8192
    if not bits.is_integer():
        raise ValueError(f"{name} = {v!r}: {v!r} KiB = {bits!r} bits is not a whole number of bits")
    return int(bits)


@dataclass(frozen=True)
class ArchTemplate:
    """Named parameters of the base accelerator ``base`` (see the module docstring); ``dataflows``
    (`Dataflow`, distinct names, each checked against ``base``) make the parameter ``"dataflow"``.

    Raises:
        TypeError: ``base`` is not an Accelerator or a dataflow not a `Dataflow`.
        ValueError: two dataflows of one name.
    """

    base: Accelerator
    dataflows: tuple = ()
    # parameter name -> (kind, key, attribute); kind "array" (key = dim) or "memory" (key = memory index)
    _params: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.base, Accelerator):
            raise TypeError(f"ArchTemplate.base must be an Accelerator, got {type(self.base).__name__}")
        p: dict[str, tuple[str, Any, str]] = {f"array.{a}": ("array", a, "") for a in self.base.array}
        for i, m in enumerate(self.base.memories):
            if m.size_bits is not None:
                p[f"memory.{m.name}.size_bits"] = ("memory", i, "size_bits")
                p[f"memory.{m.name}.size_kib"] = ("memory", i, "size_kib")
            p[f"memory.{m.name}.word_bits"] = ("memory", i, "word_bits")
        if getattr(self.base, "vector", None) is not None:  # the vector unit's width
            p[LANES] = ("vector", "lanes", "")
        if getattr(self.base, "dram", None) is not None:  # a DRAM of a kind: its kind, units, the clock
            p[DRAM_KIND] = ("dram", "kind", "")
            p[DRAM_UNITS] = ("dram", "units", "")
            p[CLOCK] = ("clock", None, "")
        dfs = tuple(self.dataflows)
        if not all(isinstance(d, Dataflow) for d in dfs):
            raise TypeError("ArchTemplate.dataflows must be Dataflow objects")
        if len({d.name for d in dfs}) != len(dfs):
            raise ValueError(f"ArchTemplate.dataflows: repeated names {[d.name for d in dfs]}")
        object.__setattr__(self, "dataflows", dfs)
        if dfs:
            p[DATAFLOW] = ("dataflow", None, "")
        object.__setattr__(self, "_params", p)

    def parameter_names(self) -> list[str]:
        """``array.<dim>`` per array dim, then per memory (innermost first) ``memory.<name>.size_bits``,
        ``.size_kib`` (bounded memories only) and ``.word_bits``; last ``dataflow`` if the template
        has dataflows."""
        return list(self._params)

    def dataflow(self, name: Any) -> Dataflow:
        """The dataflow called ``name``.

        Raises:
            UnknownParameter: the template has no dataflows.
            ValueError: no dataflow of that name (the message lists them).
        """
        self._lookup(DATAFLOW)
        for d in self.dataflows:
            if d.name == name:
                return d
        raise ValueError(f"{DATAFLOW} = {name!r}: expected one of the dataflows {[d.name for d in self.dataflows]}")

    def _lookup(self, name: str) -> tuple[str, Any, str]:
        try:
            return self._params[name]
        except (KeyError, TypeError):
            raise UnknownParameter(f"unknown parameter {name!r} of template {self.base.name!r}; known "
                                   f"parameters: {list(self._params)}") from None

    def template_value(self, name: str) -> int | float | None:
        """The base accelerator's value of parameter ``name`` (size_kib = size_bits / 8192; None
        for ``dataflow``: the base's unrolling is none of the named dataflows).

        Raises:
            UnknownParameter: ``name`` is not a parameter.
        """
        kind, key, attr = self._lookup(name)
        if kind == "dataflow":
            return None
        if kind == "dram":
            dram = cast(tuple, self.base.dram)  # a template with dram parameters has a DRAM kind
            return dram[0] if key == "kind" else dram[1]
        if kind == "clock":
            return self.base.clock_mhz
        if kind == "vector":
            return cast(Any, self.base.vector).lanes
        if kind == "array":
            return self.base.array[key]
        m = self.base.memories[key]
        return m.size_bits / 8192 if attr == "size_kib" else getattr(m, attr)

    def check_value(self, name: str, value: Any) -> int | str:
        """Check one value on its own; returns it normalised (array size, word or size in bits;
        the dataflow's name).

        Raises:
            UnknownParameter: ``name`` is not a parameter.
            ValueError: wrong type or sign (array dims, size_bits, word_bits: positive ints;
                size_kib: a positive number, ``size_kib * 8192`` a whole number of bits).
            PhysicsRangeError: a size outside the physics model of that memory
                (`costmodel.loopnest.physics.check_size`).
            ValueError: ``dataflow`` naming none of the template's dataflows.
        """
        kind, key, attr = self._lookup(name)
        if kind == "dataflow":
            return self.dataflow(value).name
        if kind == "dram":
            from costmodel.tech.dram import DRAM_KINDS, dram_spec
            if key == "kind":
                if value not in DRAM_KINDS:
                    raise ValueError(f"{name} = {value!r}: expected one of the DRAM kinds {list(DRAM_KINDS)}")
                return value
            spec = dram_spec(cast(tuple, self.base.dram)[0])
            v = _pos_int(name, value)
            if not spec.min_units <= v <= spec.max_units:
                raise PhysicsRangeError(f"{name} = {v}: expected {spec.min_units}..{spec.max_units} "
                                        f"{spec.unit}s of {spec.name}")
            return v
        if kind == "clock":
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
                    or value <= 0:
                raise ValueError(f"{name} = {value!r}: expected a positive number of MHz")
            try:
                check_clock(float(value))
            except ValueError as e:
                raise PhysicsRangeError(str(e)) from None
            return value  # type: ignore[return-value]
        if kind == "array":
            v = _pos_int(name, value)
            try:
                check_array_dim(name, v)
            except ValueError as e:
                raise PhysicsRangeError(str(e)) from None
            return v
        if kind == "vector" or attr == "word_bits":
            return _pos_int(name, value)
        bits = _kib_to_bits(name, value) if attr == "size_kib" else _pos_int(name, value)
        check_size(self.base.memories[key], bits, getattr(self.base, "tech", None))
        return bits

    def _spatial(self, sp: SpatialMapping, array: dict[str, int]) -> SpatialMapping:
        """``sp`` (an unrolling of the base's array) following ``array`` (module docstring)."""
        dims = {}
        changed = False
        for a, loops in sp.dims.items():
            if a not in array or array[a] == self.base.array.get(a) or not loops:
                dims[a] = loops
                continue
            others = math.prod(f for _, f in loops[:-1])
            last = array[a] // others
            if last < 1:
                raise InvalidDesign("spatial does not fit", f"array dim {a} of size {array[a]} cannot hold "
                                    f"the template's unrolling {[list(x) for x in loops[:-1]]} "
                                    f"(product {others}) and at least 1 of {loops[-1][0]}")
            dims[a] = loops[:-1] + ((loops[-1][0], last),)
            changed = True
        return SpatialMapping(dims) if changed else sp

    def design(self, values: Mapping[str, Any], name: str | None = None, *,
               memo: dict | None = None) -> Accelerator:
        """A new accelerator: the base with the parameter ``values`` applied (any subset of names).

        ``name`` defaults to ``<base name>_design``. With ``dataflow`` the design's unrolling and
        hint are the dataflow's (module docstring); without, the base's.

        ``memo``: an optional dict, owned by the caller and used with this template only, in which
        the work that depends on one parameter value (or a few) is kept for the next designs: each
        value's check, each resized memory per (memory, size, word), the DRAM level per (kind,
        units, clock), the unrolling per (dataflow, array). Its entries grow with the distinct
        values met, not with the designs built (a grid's expansion: one dict for the whole
        grid, `sweep.config.designspace.parse_design_space`). The design is the same with or
        without it (errors are not kept: they are raised again the same way).

        Raises (also):
            ValueError: ``memo`` already used with another template.

        Raises:
            UnknownParameter, ValueError, PhysicsRangeError: as `check_value`; ValueError also for
                size_kib and size_bits of the same memory given together.
            InvalidDesign: "too small for one word" (a memory smaller than its word), "spatial does
                not fit" (see the module docstring), "hierarchy order" or "invalid accelerator"
                (the Accelerator constructor refused the design; the message is kept).
        """
        base = self.base
        array = dict(base.array)
        sizes: dict[int, int] = {}
        words: dict[int, int] = {}
        spatial, hint, multicast = base.spatial, base.spatial_hint, base.multicast
        dram: dict[str, Any] = dict(zip(("kind", "units"), base.dram)) if base.dram is not None else {}
        clock = base.clock_mhz
        lanes = base.vector.lanes if base.vector is not None else None
        if memo is not None and memo.setdefault(_MEMO_OWNER, self) is not self:
            raise ValueError("ArchTemplate.design: memo was used with another template")
        for pname, value in values.items():
            kind, key, attr, v = self._checked(pname, value, memo)
            if kind == "dram":
                dram[key] = v
                continue
            if kind == "clock":
                clock = float(v)
                continue
            if kind == "vector":
                lanes = v
                continue
            if kind == "dataflow":
                df = self.dataflow(v)
                if df.spatial is not None:   # df.kind == "fixed"
                    spatial, hint = df.spatial, None
                else:
                    spatial, hint = SpatialMapping({}), df.hint
                multicast = df.multicast or multicast
                continue
            assert isinstance(v, int)  # check_value: an int for every parameter but the dataflow
            if kind == "array":
                array[key] = v
            elif attr == "word_bits":
                words[key] = v
            else:
                if key in sizes:
                    raise ValueError(f"memory {base.memories[key].name!r}: give size_bits or size_kib, "
                                     f"not both")
                sizes[key] = v
        mems = self._memories(sizes, words, memo)
        extra: dict[str, Any] = {}
        if dram and ((dram["kind"], dram["units"]) != base.dram or clock != base.clock_mhz):
            mems[-1], extra = self._dram_level(dram, clock, mems[-1], memo)
        if memo is None or not spatial.dims:
            spatial = self._spatial(spatial, array)
        else:   # the base's or a dataflow's unrolling: keyed by the object (kept alive in the entry)
            skey = ("spatial", id(spatial), tuple(array.items()))
            sp = memo.get(skey)
            if sp is None:
                sp = memo[skey] = (spatial, self._spatial(spatial, array))
            spatial = sp[1]
        if base.vector is not None and lanes is not None and lanes != base.vector.lanes:
            extra["vector"] = replace(base.vector, lanes=lanes)
        try:
            if multicast != base.multicast:
                extra["multicast"] = multicast
            return replace(base, name=name if name is not None else f"{base.name}_design", array=array,
                           memories=tuple(mems), spatial=spatial, spatial_hint=hint, **extra)
        except ValueError as e:
            reason = "hierarchy order" if "sits above" in str(e) else (
                "spatial does not fit" if "spatial" in str(e) else "invalid accelerator")
            raise InvalidDesign(reason, str(e)) from None

    def _memories(self, sizes: dict[int, int], words: dict[int, int], memo: dict | None) -> list:
        """The base's memories with memory i resized to ``sizes[i]`` bits and / or ``words[i]``-bit
        words (`scale_memory`; kept in ``memo`` per (memory, size, word))."""
        mems = list(self.base.memories)
        for i in sorted(set(sizes) | set(words)):
            mkey = ("memory", i, sizes.get(i), words.get(i))
            lv = memo.get(mkey) if memo is not None else None
            if lv is None:
                try:
                    lv = scale_memory(mems[i], sizes.get(i), words.get(i), getattr(self.base, "tech", None))
                except TooSmallForWord as e:
                    raise InvalidDesign("too small for one word", str(e)) from None
                if memo is not None:
                    memo[mkey] = lv
            mems[i] = lv
        return mems

    def area_mm2(self, values: Mapping[str, Any], *, memo: dict | None = None) -> float:
        """Chip area of ``design(values)``, mm^2 (`costmodel.loopnest.physics.design_area_mm2`);
        ``memo`` as `design` (also keeping each memory's area per size and instance count)."""
        return design_area_mm2(self.design(values, memo=memo), cache=memo)

    def _dram_level(self, dram: dict[str, Any], clock: float, top: MemoryLevel,
                    memo: dict | None) -> tuple[MemoryLevel, dict[str, Any]]:
        """The DRAM level of a design whose DRAM kind, units or clock differ from the base's, and the
        Accelerator fields that change with it: a pin rate and a capacity per unit are the base
        kind's (kept while the kind is), the sustained fraction the chip's (kept)."""
        base = self.base
        same = dram["kind"] == cast(tuple, base.dram)[0]
        dkey = ("dram", dram["kind"], type(dram["kind"]), dram["units"], type(dram["units"]), clock, type(clock))
        lv = memo.get(dkey) if memo is not None else None
        if lv is None:
            from costmodel.loopnest.arch import dram_level
            lv = dram_level(str(dram["kind"]), int(dram["units"]), clock, name=top.name, operands=top.operands,
                            gbps_per_unit=base.dram_gbps_per_unit if same else None, sustained=base.dram_sustained)
            lv = replace(lv, private_to=top.private_to)
            if memo is not None:
                memo[dkey] = lv
        return lv, {"dram": (dram["kind"], dram["units"]), "clock_mhz": clock,
                    "dram_gbps_per_unit": base.dram_gbps_per_unit if same else None,
                    "dram_gib_per_unit": base.dram_gib_per_unit if same else None}

    def _checked(self, pname: str, value: Any, memo: dict | None) -> tuple[str, Any, str, Any]:
        """(kind, key, attribute, `check_value`'s result) of one parameter value; kept in ``memo``
        per (name, type, value) (a bool is never taken for the int it equals; errors not kept)."""
        if memo is None:
            v = self.check_value(pname, value)
            return (*self._params[pname], v)
        ckey = ("value", pname, type(value), value)
        try:
            hit = memo.get(ckey)
        except TypeError:   # an unhashable value: checked (and refused) without the memo
            v = self.check_value(pname, value)
            return (*self._params[pname], v)
        if hit is None:
            v = self.check_value(pname, value)
            hit = memo[ckey] = (*self._params[pname], v)
        return hit
