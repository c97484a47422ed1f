"""The small interface every mapper implements, and declared mapper parameters.

A mapper turns a problem into result rows. The protocol is generic over the problem type of the
mapper's kind (`Mapper[ProblemT]`): a loop-nest mapper is a `LayerMapper` (`Mapper[LayerProblem]`),
the npu mappers take a `mappers.npu.tiled.NPUProblem`, DeepOpt an
`mappers.systolic.deepopt.AllocationProblem`; a mapper of one layer also builds its own problem
(`Mapper.make_problem`), so the engine names no problem type. It exposes *work units* (independent pieces such as a
chunk of hardware points, an annealing chain with its seed, a shard of an exhaustive space) and
runs one unit in-process; the engine in `sweep/` decides where units run and stores their rows.

Parameters are declared once, as data (`Param`), so that campaign validation, `sweep list mappers`
and tuning read the same declaration (the scikit-learn `_parameter_constraints` pattern).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Mapping, Sequence, TypeVar

import numpy as np

if TYPE_CHECKING:  # types only: importing them here would load the cost model with the protocol
    from costmodel.loopnest.arch import Accelerator
    from costmodel.loopnest.mapping import SpatialMapping
    from costmodel.workload import Layer

__all__ = ["Param", "Mapper", "LayerMapper", "ProblemT", "KINDS", "ExtraColumn", "Columns", "check_params", "LayerProblem", "WorkUnit",
           "SearchResult", "LoopNestDetail", "AllocationDetail", "best_of", "concat_columns", "resolve_params",
           "chain_seeds", "OBJECTIVES", "objective_value", "result_status"]

#: A batch of result rows as columns of equal length (name -> 1-D array or list).
Columns = dict[str, Any]


@dataclass(frozen=True)
class Param:
    """A declared mapper parameter: name, type, default, help and its allowed values.

    ``type`` is one of ``int``, ``float``, ``str``, ``bool``, ``list[str]``, ``int|all`` (a
    positive integer or the string "all"). ``choices`` (for str and list[str]) and ``low``/``high``
    (inclusive, for numbers) constrain the value. A parameter
    whose default is None is optional: None is accepted for it (meaning absent).
    """

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    omit_default: bool = False   # left out of resolved params unless given (see check_params)

    def check(self, value: Any) -> str | None:
        """Return None if ``value`` is allowed, else a message saying what was expected."""
        t = self.type
        if value is None and self.default is None:
            return None  # an optional parameter given as None = absent
        if t == "bool":
            ok = isinstance(value, bool)
        elif t == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif t == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif t == "str":
            ok = isinstance(value, str)
        elif t == "list[str]":
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value) and len(value) > 0
        elif t == "int|all":
            if value == "all":
                return None
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:  # pragma: no cover - declaration error
            raise TypeError(f"unknown param type {t!r}")
        if not ok:
            what = {"list[str]": "a non-empty list of strings", "int|all": 'a positive integer or "all"'}
            return f"expected {what.get(t, 'a ' + t)}"
        if t == "float" and not math.isfinite(value):
            return "expected a finite float (NaN and infinities are refused)"
        if self.choices is not None:
            vals = value if t == "list[str]" else [value]
            bad = [v for v in vals if v not in self.choices]
            if bad:
                return f"expected one of {list(self.choices)}, got {bad[0]!r}"
            if t == "list[str]" and len(set(vals)) != len(vals):
                return "duplicate entries"
        if self.low is not None and value < self.low:
            return f"expected >= {self.low}"
        if self.high is not None and value > self.high:
            return f"expected <= {self.high}"
        return None


def check_params(params: Sequence[Param], given: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, Any, str]]]:
    """Fill defaults and check ``given`` against the declarations.

    A parameter declared with ``omit_default`` is in the resolved params only when given: such
    parameters were added after rows existed, and the resolved params are part of every problem id
    and row, so a campaign that does not use them keeps its ids and rows; the mapper reads them
    with their default.

    Returns:
        (resolved params, problems) where each problem is (param name, value, message).
    """
    decl = {p.name: p for p in params}
    problems: list[tuple[str, Any, str]] = []
    for k, v in given.items():
        if k not in decl:
            problems.append((k, v, f"unknown parameter; known: {sorted(decl)}"))
            continue
        msg = decl[k].check(v)
        if msg:
            problems.append((k, v, msg))
    resolved = {p.name: given.get(p.name, p.default) for p in params if p.name in given or not p.omit_default}
    return resolved, problems


#: The kinds of architecture a mapper maps (`Mapper.kind`): one layer on a loop-nest
#: `costmodel.loopnest.arch.Accelerator`, one layer on Flexer's multi-NPU `costmodel.npu.NPUArch`,
#: or a network on every point of a grid of DeepOpt's J x K systolic arrays.
KINDS = ("loopnest", "npu", "systolic")


@dataclass(frozen=True)
class ExtraColumn:
    """A mapper-specific figure that the engine stores in a column of its own.

    ``key`` is the key of `SearchResult.extra` it is read from (None = ``name``); ``type`` is
    "float", "int" or "str" (the value is converted; a missing key is stored as null).
    """

    name: str
    type: str
    help: str
    key: str | None = None

    def value(self, extra: Mapping[str, Any]) -> Any:
        """This column's value in a result's ``extra`` mapping (None if absent or None)."""
        v = extra.get(self.key or self.name)
        if v is None:
            return None
        return float(v) if self.type == "float" else int(v) if self.type == "int" else str(v)


#: The problem type of a mapper's kind (`Mapper` is generic over it).
ProblemT = TypeVar("ProblemT")


class Mapper(ABC, Generic[ProblemT]):
    """The one protocol every mapper implements (the engine needs nothing else of a mapper).

    Generic over ``ProblemT``, the problem type of its kind: `LayerProblem` (loop-nest, see
    `LayerMapper`), `mappers.npu.tiled.NPUProblem` (npu), `mappers.systolic.deepopt.AllocationProblem`
    (systolic). A mapper of one layer on one architecture builds its problem with `make_problem`,
    which the engine calls without naming the type.

    Class attributes, declared once and read by validation, ``sweep list mappers``, task ids and
    Optuna: ``name``; ``version`` (a string, bump it when results change: it is part of every
    task_id); ``kind`` (one of `KINDS`); ``params`` (the `Param` declarations); ``columns`` (the
    `ExtraColumn` figures of `SearchResult.extra` the engine stores in their own columns).

    Lifecycle. The engine resolves the campaign's parameters once (`resolve`: defaults filled,
    values checked), then:

    1. `units` (problem, params) is called once per problem, on the driver, to split the search
       into independent work units (annealing chains with their seeds, exhaustive shards, chunks
       of tilings or of hardware points). It must be cheap and deterministic.
    2. `run` (problem, unit, params) is called once per unit, anywhere (in-process, or in a Ray
       worker on another machine); it must be deterministic given its arguments.
    3. `reduce` (results) folds the unit results of one problem, in unit order, into one (the
       best; ties to the first unit). The engine stores unit rows and reduces when reading, so
       `reduce` is what `search` and ``sweep map`` use.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    kind: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    columns: ClassVar[tuple[ExtraColumn, ...]] = ()
    #: The version of how the mapper breaks ties on the latency objective (`rank_key`: by energy);
    #: 0 = it does not. Part of the task ids of its latency-objective problems only (`id_version`),
    #: so the ids of its energy and EDP problems, whose results the rule does not touch, stay.
    latency_ties: ClassVar[int] = 0

    def id_version(self, objective: str | None) -> str:
        """``version`` as task ids hold it: with ``+ties<n>`` for a latency-objective problem of a
        mapper that breaks latency ties (`latency_ties`)."""
        return f"{self.version}+ties{self.latency_ties}" if objective == "latency" and self.latency_ties else self.version

    def make_problem(self, layer: Layer, arch: Any, spatial: SpatialMapping | None = None,
                     objective: str = "energy") -> ProblemT:
        """The problem of mapping ``layer`` on ``arch`` (``spatial``: a fixed spatial unrolling, None =
        the architecture's default; ``objective``: the campaign's objective).

        Raises:
            TypeError: this mapper does not map one layer (DeepOpt: a grid of hardware points), or
                ``arch`` is not of its kind.
        """
        raise TypeError(f"{self.name} ({self.kind}) does not map a single layer on one architecture")

    @abstractmethod
    def units(self, problem: ProblemT, params: Mapping[str, Any]) -> list["WorkUnit"]:
        """The independent work units of ``problem`` (at least one), in a deterministic order."""

    def unit_count(self, problem: ProblemT, params: Mapping[str, Any]) -> int:
        """``len(units(problem, params))``; a mapper whose units cost something to list (an
        evaluator, a tiling enumeration) counts them without building them (counting a
        campaign's tasks)."""
        return len(self.units(problem, params))

    @abstractmethod
    def run(self, problem: ProblemT, unit: "WorkUnit", params: Mapping[str, Any]) -> "SearchResult":
        """Run one work unit in-process with resolved ``params``; deterministic."""

    def unit_floor(self, problem: ProblemT, unit: "WorkUnit", params: Mapping[str, Any]) -> float | None:
        """A value (in the objective's unit) that no result of ``unit`` can beat, known without
        running it, or None (the default: unknown). A caller that runs the units in order may skip
        a unit whose floor exceeds the best value found so far: the best (and its ties) cannot
        change (`sweep.engine.problem.Problem.solve`)."""
        return None

    def reduce(self, results: Sequence["SearchResult"]) -> "SearchResult":
        """Best unit result (first of equal values); evaluations and wall time summed."""
        return best_of(results, bool(self.latency_ties))

    def resolve(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults filled in and values checked. Raises ValueError listing every problem."""
        return resolve_params(self, params)

    #: True for mappers that search spatial unrollings per layer under the accelerator's hint
    #: (their ``spatial`` parameter, `spatial_mode`); the engine asks, never guesses from names.
    searches_spatial: ClassVar[bool] = False

    def spatial_mode(self, problem: ProblemT, params: Mapping[str, Any]) -> str:
        """``"search"`` if this mapper searches ``problem``'s spatial unrolling with ``params``,
        else ``"fixed"`` (the default: the problem's or the accelerator's unrolling)."""
        return "fixed"

    def uses_hint(self, problem: ProblemT, params: Mapping[str, Any]) -> bool:
        """True if the accelerator's ``[spatial_hint]`` changes this mapper's result on ``problem``
        with ``params`` (then it is part of the problem's identity: the hint is not in the
        accelerator's repr). Default: False."""
        return False

    @property
    def seeded(self) -> bool:
        """True if the mapper takes a ``seed`` parameter (it runs once per campaign seed)."""
        return any(p.name == "seed" for p in self.params)

    def with_seed(self, params: Mapping[str, Any] | None, seed: int | None, keep: bool = False) -> dict[str, Any]:
        """A copy of ``params`` with ``seed`` set when the mapper is `seeded` and ``seed`` is not
        None (the one place a problem's seed enters its parameters); ``keep``: a seed already in
        ``params`` wins (a user's ``--param seed=``)."""
        out = dict(params or {})
        if seed is not None and self.seeded and not (keep and "seed" in out):
            out["seed"] = seed
        return out

    def search(self, problem: ProblemT, params: Mapping[str, Any] | None = None) -> "SearchResult":
        """All units in-process, reduced (parameters checked, defaults filled)."""
        p = self.resolve(params)
        return self.reduce([self.run(problem, u, p) for u in self.units(problem, p)])

    def explain_infeasible(self, problem: ProblemT, result: "SearchResult", params: Mapping[str, Any]) -> str:
        """Why ``result`` (value +inf: nothing valid found) has no answer, as a sentence a person can
        act on (which memory overflows, which limit was hit). The default: the mapper's own
        ``extra["reason"]``, else a generic sentence; kinds and mappers refine it."""
        own = (result.extra or {}).get("reason")
        return str(own) if own else f"{self.name} found no valid result"


def concat_columns(parts: Sequence[Columns]) -> Columns:
    """Concatenate row batches with equal column names."""
    if not parts:
        return {}
    keys = list(parts[0])
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in keys}


@dataclass(frozen=True, slots=True)
class LayerProblem:
    """Map one layer on one accelerator (the loop-nest mappers: loma, salsa, random, ...).

    ``spatial`` None = the accelerator's default spatial unrolling. ``objective`` is one of
    "energy" (pJ), "latency" (cycles) or "edp" (pJ x cycles). ``even`` forces even mapping (the
    same memory-level boundaries for every operand).
    """

    layer: Layer
    arch: Accelerator
    spatial: SpatialMapping | None = None
    objective: str = "energy"
    even: bool = False


class LayerMapper(Mapper[LayerProblem]):
    """A loop-nest mapper: one layer on one `costmodel.loopnest.arch.Accelerator` (`LayerProblem`)."""

    kind = "loopnest"

    def make_problem(self, layer: Layer, arch: Any, spatial: SpatialMapping | None = None,
                     objective: str = "energy") -> LayerProblem:
        """`LayerProblem` (layer, arch, spatial, objective). Raises TypeError unless ``arch`` is an
        `Accelerator`."""
        from costmodel.loopnest.arch import Accelerator
        if not isinstance(arch, Accelerator):
            raise TypeError(f"{self.name} needs an Accelerator (costmodel.loopnest.arch), got {type(arch).__name__}")
        return LayerProblem(layer, arch.for_layer(layer), spatial, objective)  # a fused tile: operands on chip

    def explain_infeasible(self, problem: LayerProblem, result: "SearchResult", params: Mapping[str, Any]) -> str:
        """Why no valid mapping was found: first whether any mapping can fit (the smallest tiles of
        the problem's unrolling, `costmodel.loopnest.allocation.capacity_floor`: if they overflow
        a memory, no mapper can succeed), else the search's own reason (`search_shortfall`)."""
        from costmodel.loopnest.allocation import capacity_floor
        floor = capacity_floor(problem.layer, problem.arch, problem.spatial)
        if floor:
            return floor
        return self.search_shortfall(problem, result, params)

    def uses_hint(self, problem: LayerProblem, params: Mapping[str, Any]) -> bool:
        """A full-space mapper with a ``hint`` parameter obeys the hint unless ``hint = false``; a
        loop-order mapper when it searches the unrolling (`LoopOrderMapper.uses_hint`)."""
        if any(p.name == "hint" for p in self.params):
            return params.get("hint", True) is not False
        return self.spatial_mode(problem, params) == "search"

    def search_shortfall(self, problem: LayerProblem, result: "SearchResult", params: Mapping[str, Any]) -> str:
        """Why the search missed where valid mappings exist (the smallest tiles fit): the mapper's
        ``extra["reason"]`` if it gave one, else a suggestion to search longer."""
        own = (result.extra or {}).get("reason")
        what = f": the last candidate was invalid ({own})" if own else ""
        return (f"{self.name} found no valid mapping although one exists (every temporal loop at the top "
                f"memory level fits){what}; its search or its allocation missed it (the loop-order "
                "mappers' LOMA allocation fills the lower memories first, which can overflow an upper one): "
                "search longer, or use a full-space mapper (cosa, primitive_sa)")


@dataclass(frozen=True)
class WorkUnit:
    """One independent piece of a search: an SA chain (``seed``), an exhaustive shard
    (``shard`` of ``shards``), or both. ``spec`` is the mapper's own description of the piece
    (a chain id, a point or tiling range ``start`` / ``stop``, a MIP solve, a spatial candidate):
    JSON-able, read back only by the mapper that made it."""

    kind: str
    seed: int | None = None
    shard: int = 0
    shards: int = 1
    spec: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LoopNestDetail:
    """What a loop-nest mapper found besides the figures (`SearchResult.detail`): ``loops`` the
    best temporal loops innermost first as (dim, factor); ``ordering`` the same as LPF type ids of
    the batch evaluator (loop-order mappers only; None for the full-space mappers)."""

    loops: tuple[tuple[str, int], ...]
    ordering: tuple[int, ...] | None = None


@dataclass(frozen=True)
class AllocationDetail:
    """What DeepOpt's result says besides the figures (`SearchResult.detail`): ``network_pm``, how a
    network's PM is formed ("sum" of per-layer PMs, or "product" of the network totals). The
    result's ``engine`` holds the same string (the rows' ``engine`` column)."""

    network_pm: str


@dataclass
class SearchResult:
    """The outcome of a search or of one of its work units (SciPy's OptimizeResult idea).

    The figures every mapper has: ``value`` the objective (+inf if nothing valid was found);
    ``energy_pj`` pJ (NaN for the npu kind, whose model has no energy); ``latency_cycles`` cycles;
    ``engine`` the variant of the search that ran (e.g. salsa's "sa" or "exhaustive", "mip";
    DeepOpt: its network PM mode); ``evaluations`` cost-model evaluations done; ``wall_s``
    seconds; ``history`` optionally the objective of every visited state (for distribution plots).

    Kind-specific results: ``detail`` is typed per kind (`LoopNestDetail`: the best loops and
    ordering; `AllocationDetail`: DeepOpt's PM mode), None when the kind has none or nothing valid
    was found. ``extra`` holds the mapper's own figures (the mapping, solver status, bytes by type,
    ...): the engine stores it as JSON, and the keys the mapper declares in `Mapper.columns` also
    in columns of their own. ``tables`` holds the rows of a unit that keeps every candidate it
    evaluated (DeepOpt: one row per hardware point x network x PM), table name -> `Columns`; the
    engine stores them as they are.
    """

    mapper: str
    engine: str
    objective: str
    value: float
    energy_pj: float
    latency_cycles: float
    evaluations: int
    wall_s: float
    seed: int | None = None
    history: Any = None
    extra: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    detail: LoopNestDetail | AllocationDetail | None = None

    @property
    def edp(self) -> float:
        """Energy-delay product, pJ x cycles."""
        return self.energy_pj * self.latency_cycles

    @property
    def loops(self) -> tuple[tuple[str, int], ...] | None:
        """The best temporal loops (`LoopNestDetail.loops`) of a loop-nest result, else None."""
        return self.detail.loops if isinstance(self.detail, LoopNestDetail) else None

    @property
    def ordering(self) -> tuple[int, ...] | None:
        """The best ordering (`LoopNestDetail.ordering`) of a loop-order result, else None."""
        return self.detail.ordering if isinstance(self.detail, LoopNestDetail) else None


def rank_key(r: SearchResult, latency_ties: bool = True) -> tuple[float, float]:
    """How results of one problem are ordered: by the objective, and, with ``latency_ties``, under
    the latency objective ties by energy (mappings that tie on latency, compute-bound ones, differ
    in what they move: the one that moves less wins; `Mapper.latency_ties`); (value, 0) otherwise,
    so the first of equal values stays first."""
    tie = latency_ties and r.objective == "latency" and math.isfinite(r.energy_pj)
    return (r.value, r.energy_pj if tie else 0.0)


def best_of(results: Sequence[SearchResult], latency_ties: bool = False) -> SearchResult:
    """Reduce work-unit results to the best one (`rank_key`; ``latency_ties``: a mapper that breaks
    latency ties by energy); evaluations and wall time are summed.

    Ties go to the first in the given order (callers pass units in a deterministic order).
    """
    if not results:
        raise ValueError("no results to reduce")
    best = min(results, key=lambda r: rank_key(r, latency_ties))  # min keeps the first of equal keys
    return replace(best, evaluations=sum(r.evaluations for r in results),
                   wall_s=sum(r.wall_s for r in results),
                   extra=dict(best.extra, units=len(results)))


def result_status(mapper: "Mapper[Any]", problem: Any, result: SearchResult, params: Mapping[str, Any]) -> tuple[str, str]:
    """The status of a result row and its reason: ("ok", "") when ``result.value`` is finite;
    ("skipped", the mapper's reason) when the mapper declined the search by design (engine
    "skipped", e.g. loma above ``max_orderings``); else ("infeasible", `Mapper.explain_infeasible`):
    nothing valid was found, an outcome of the search (not an error of the code) with a reason a
    person can act on."""
    if math.isfinite(result.value):
        return "ok", ""
    if result.engine == "skipped":
        return "skipped", str((result.extra or {}).get("reason") or f"{mapper.name} skipped the search")
    try:
        return "infeasible", mapper.explain_infeasible(problem, result, params)
    except Exception as e:  # noqa: BLE001 - the reason is a courtesy; the status stands
        return "infeasible", f"{mapper.name} found no valid result (its reason could not be derived: {e})"


def resolve_params(mapper: Mapper[Any], params: Mapping[str, Any] | None) -> dict[str, Any]:
    """`check_params` against ``mapper.params`` that raises ValueError listing every problem."""
    resolved, problems = check_params(mapper.params, dict(params or {}))
    if problems:
        raise ValueError("; ".join(f"the {k!r} parameter of {mapper.name} {m} (got {v!r})"
                                   for k, v, m in problems))
    return resolved


def chain_seeds(seed: int, chains: int) -> list[int]:
    """Seeds of ``chains`` independent chains: ``numpy.random.SeedSequence(seed).spawn(chains)``,
    each child reduced to a 63-bit int (so that it fits a signed 64-bit column)."""
    out = []
    for child in np.random.SeedSequence(int(seed)).spawn(int(chains)):
        a, b = child.generate_state(2, dtype=np.uint32)
        out.append(((int(a) << 32) | int(b)) & ((1 << 63) - 1))
    return out


#: The loop-nest objectives (`LayerProblem.objective`), in the order of an evaluator's
#: (energy pJ, latency cycles, EDP pJ x cycles) triple.
OBJECTIVES = ("energy", "latency", "edp")


def objective_index(objective: str) -> int:
    """Position of ``objective`` in `OBJECTIVES` (and in an evaluator's cost triple).

    Raises:
        KeyError: not one of `OBJECTIVES`.
    """
    try:
        return OBJECTIVES.index(objective)
    except ValueError:
        raise KeyError(f"unknown objective {objective!r}; expected one of {list(OBJECTIVES)}") from None


def objective_value(cost: Any, objective: str) -> float:
    """The objective of a cost report (energy_pj, latency_cycles, edp attributes); +inf if the
    report has a false ``valid`` attribute (a mapping that does not fit)."""
    if not getattr(cost, "valid", True):
        return float("inf")
    return float((cost.energy_pj, cost.latency_cycles, cost.edp)[objective_index(objective)])
