"""The small interface every mapper implements, and declared mapper parameters.

A mapper turns a problem into result rows. It exposes *work units* (independent pieces such as a
chunk of hardware points, an annealing chain with its seed, a shard of an exhaustive space) and
runs one unit in-process; the engine in `sweep/` decides where units run and stores their rows.

Parameters are declared once, as data (`Param`), so that campaign validation, `sweep list mappers`
and tuning read the same declaration (the scikit-learn `_parameter_constraints` pattern).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

__all__ = ["Param", "Mapper", "Columns", "check_params", "LayerProblem", "WorkUnit", "SearchResult", "best_of",
           "resolve_params", "chain_seeds", "SearchMixin"]

#: A batch of result rows as columns of equal length (name -> 1-D array or list).
Columns = dict[str, Any]


@dataclass(frozen=True)
class Param:
    """A declared mapper parameter: name, type, default, help and its allowed values.

    ``type`` is one of ``int``, ``float``, ``str``, ``bool``, ``list[str]``. ``choices`` (for str
    and list[str]) and ``low``/``high`` (inclusive, for numbers) constrain the value. A parameter
    whose default is None is optional: None is accepted for it (meaning absent).
    """

    name: str
    type: str
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None

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
        else:  # pragma: no cover - declaration error
            raise TypeError(f"unknown param type {t!r}")
        if not ok:
            return f"expected {'a non-empty list of strings' if t == 'list[str]' else 'a ' + t}"
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
    resolved = {p.name: given.get(p.name, p.default) for p in params}
    return resolved, problems


class Mapper(Protocol):
    """What the engine needs of a mapper.

    Lifecycle: the engine resolves ``params`` against `params` once, asks `units` for the
    independent work units of a problem, calls `run` on each unit (anywhere: in-process or in a
    Ray worker) and stores the rows it returns. `run` must be deterministic given its inputs.
    """

    name: str
    version: str  # bump when results change: it is part of every task_id
    params: tuple[Param, ...]

    def run(self, problem: Any, params: Mapping[str, Any]) -> Columns: ...


def concat_columns(parts: Sequence[Columns]) -> Columns:
    """Concatenate row batches with equal column names."""
    if not parts:
        return {}
    keys = list(parts[0])
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in keys}


@dataclass(frozen=True)
class LayerProblem:
    """Map one layer on one accelerator (the loop-nest mappers: loma, salsa, random, ...).

    ``spatial`` None = the accelerator's default spatial unrolling. ``objective`` is one of
    "energy" (pJ), "latency" (cycles) or "edp" (pJ x cycles). ``even`` forces even mapping (the
    same memory-level boundaries for every operand).
    """

    layer: Any                      # costmodel.workload.Layer
    arch: Any                       # costmodel.loopnest.arch.Accelerator
    spatial: Any = None             # costmodel.loopnest.mapping.SpatialMapping | None
    objective: str = "energy"
    even: bool = False


@dataclass(frozen=True)
class WorkUnit:
    """One independent piece of a search: an SA chain (``seed``), an exhaustive shard
    (``shard`` of ``shards``), or both. ``budget`` is mapper-specific (e.g. iterations)."""

    kind: str
    seed: int | None = None
    shard: int = 0
    shards: int = 1
    budget: dict = field(default_factory=dict)


@dataclass
class SearchResult:
    """The outcome of a search or of one of its work units (SciPy's OptimizeResult idea).

    ``value`` is the objective (+inf if nothing valid was found); ``loops`` the best temporal
    loops innermost first as (dim, factor); ``ordering`` the same as LPF type ids of the
    evaluator; ``evaluations`` cost-model evaluations done; ``wall_s`` seconds; ``history``
    optionally the objective of every visited state (for distribution plots).
    """

    mapper: str
    engine: str
    objective: str
    value: float
    energy_pj: float
    latency_cycles: float
    ordering: tuple[int, ...] | None
    loops: tuple[tuple[str, int], ...] | None
    evaluations: int
    wall_s: float
    seed: int | None = None
    history: Any = None
    extra: dict = field(default_factory=dict)

    @property
    def edp(self) -> float:
        """Energy-delay product, pJ x cycles."""
        return self.energy_pj * self.latency_cycles


def best_of(results: Sequence[SearchResult]) -> SearchResult:
    """Reduce work-unit results to the best one; evaluations and wall time are summed.

    Ties go to the first in the given order (callers pass units in a deterministic order).
    """
    if not results:
        raise ValueError("no results to reduce")
    best = min(results, key=lambda r: r.value)  # min keeps the first of equal values
    from dataclasses import replace
    return replace(best, evaluations=sum(r.evaluations for r in results),
                   wall_s=sum(r.wall_s for r in results),
                   extra=dict(best.extra, units=len(results)))


def resolve_params(mapper, params: Mapping[str, Any] | None) -> dict[str, Any]:
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


class SearchMixin:
    """The lifecycle helpers every loop-nest mapper shares: `resolve` (declared parameters
    checked, defaults filled), `reduce` (`best_of` the units, in unit order) and `search` (all
    units in-process, then reduced)."""

    def resolve(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """Defaults filled in and values checked. Raises ValueError listing every problem."""
        return resolve_params(self, params)

    def reduce(self, results: Sequence[SearchResult]) -> SearchResult:
        """Best unit result (first of equal values); evaluations and wall time summed."""
        return best_of(results)

    def search(self, problem: LayerProblem, params: Mapping[str, Any] | None = None) -> SearchResult:
        """All units in-process, reduced (parameters checked, defaults filled)."""
        p = self.resolve(params)
        return self.reduce([self.run(problem, u, p) for u in self.units(problem, p)])
