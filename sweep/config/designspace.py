"""Architecture search on the loop-nest model: a template accelerator, a grid over its named
parameters, and the ``[search]`` table.

Campaign form (``campaigns/archsearch_eyeriss.toml``)::

    [architectures]
    kind = "loopnest"
    template = "eyeriss_like"             # a preset, or an accelerator TOML file (also one
                                          # written by `sweep import zigzag`)
    gpu_memory_utilization = 0.9          # optional: the share of each design's DRAM a transformer
                                          # step may fill (costmodel.capacity; vLLM's default 0.9)
    [architectures.grid]                  # dotted names of the template's parameters
    array.D1 = [7, 14, 28]                # value lists, {start, stop, step}, {pow2 = [lo, hi]}
    array.D2 = [6, 12, 24]
    memory.sram_1M.size_kib = {pow2 = [32, 512]}
    memory.rf_64B_W.size_bits = [128, 256, 512, 1024]
    dataflow = ["ws", "rs", "flexible"]   # optional: names of [architectures.dataflows] below
    constraints = ["array.D1 * array.D2 <= 512"]   # over the numeric names above and area_mm2
    area_budget_mm2 = 12.0                # keep area <= budget (and >= min_area_fraction * budget)

    [architectures.dataflows.ws]          # a fixed spatial unrolling, written for the template's
    spatial = { D1 = [["C", 14]], D2 = [["K", 12]] }   # array (it follows each design's array)
    [architectures.dataflows.rs]
    spatial = { D1 = [["OY", 14]], D2 = [["FY", 3], ["K", 4]] }
    [architectures.dataflows.flexible]    # a hint: each layer's unrolling searched by the mapper
    spatial_hint = { D1 = ["K", "C", "OX", "OY"], D2 = ["K", "C", "FX", "FY"], max_dims = 2 }

    [search]
    sampler = "grid"                      # "grid" | "random" | "tpe" | "nsga2"
    trials = 200                          # distinct designs to evaluate (random, tpe, nsga2)
    seed = 0
    objectives = ["edp"]                  # or two, e.g. ["edp", "area_mm2"]

The parameters are those of `costmodel.loopnest.template.ArchTemplate`: ``array.<dim>``,
``memory.<name>.size_bits`` / ``size_kib`` / ``word_bits``. Each axis value is checked alone
against the physics model (`costmodel.loopnest.physics`): a value outside it (an SRAM below 4 KiB
or above 512 KiB, a register file of 4 KiB or more) is a campaign error naming the key. Then every
point of the cross product is built (`ArchTemplate.design`, whose default spatial unrolling
follows the array): an *invalid* point (a memory smaller than one word, a spatial unrolling larger
than the array) is dropped and counted by reason; so are points failing a constraint or the area
window. `sweep validate` prints the counts. No valid point left is a campaign error.

Search objectives are per-design figures: ``edp``, ``energy_pj``, ``latency_cycles`` (each the
geometric mean over the campaign's networks of that network's total) and ``area_mm2``; with
transformer steps among the networks also ``time_per_token_s`` (the geometric mean over the decode
steps), ``ttft_s`` (over the prefill steps) and ``energy_per_token_j`` (over every step): each a
campaign error naming ``search.objectives`` when no network has that figure; with a ``[workload]``
serving mix (`costmodel.llm.ServingMix`) also ``request_latency_s`` and ``energy_per_request_j``
(its own row of the totals).

Dataflows (`costmodel.loopnest.template.Dataflow`): each table of ``[architectures.dataflows]``
names one, with exactly one of ``spatial`` (a fixed unrolling, array dim -> [[loop dim, factor],
...], which must fit the template's array) or ``spatial_hint`` (an accelerator's
``[spatial_hint]`` table, `costmodel.loopnest.hint.SpatialHint`), and optionally ``multicast``
(``{ I = [array dims] }``: its interconnect multicasts inputs over those dims, the accelerator key
of that name; the design takes it in place of the template's). The grid parameter ``dataflow``
lists the names to try (in that order; a categorical axis for every sampler, Optuna included). A
design of a fixed dataflow gets that unrolling following its array ("spatial does not fit" points
are dropped and counted as any invalid point) and no hint; a design of a hint dataflow gets an
empty unrolling and the hint, so the loop-order mappers (``spatial = "search"``, their default
then) search each layer's unrolling. Without a ``dataflow`` axis every design keeps the template's
``[spatial]`` and ``[spatial_hint]``. A design's identity (``design_id``, hence task ids) holds its
dataflow's name and definition. The ``dataflow`` column of the results holds the name; a
constraint cannot name it. Campaign errors (exit 2): ``dataflow`` in the grid without
``[architectures.dataflows]`` or naming an unknown dataflow, dataflows without a ``dataflow`` axis,
a dataflow with both or neither of spatial / spatial_hint, a bad unrolling, hint or multicast.
`check_dataflow_mappers` checks that the campaign's mapper can map every dataflow (a hint needs
loma, salsa or random without ``spatial = "fixed"``; each layer an unrolling under the hint).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from costmodel.loopnest.template import CATEGORICAL, DATAFLOW, DRAM_KIND
from costmodel.capacity import GPU_MEMORY_UTILIZATION
from sweep.config.archspace import MEMORY_SHARE_KEY, area_window, axis_values, parse_memory_share
from sweep.config.validation import Bad, check_seed, check_table, is_int, resolve_path
from sweep.config.expr import ExprError, evaluate, parse
from sweep.common.ids import stable_hash
from sweep.study import sampler_names

__all__ = ["DesignSpace", "SearchSpec", "parse_design_space", "parse_search", 
           "check_dataflow_mappers", "check_step_objectives", "SAMPLERS", "SEARCH_OBJECTIVES", "STEP_OBJECTIVES"]

#: Samplers of ``[search]``: every valid design, a seeded uniform sample, or an Optuna study
#: (the names `sweep.study.SAMPLERS` gives architecture search).
SAMPLERS = sampler_names("archsearch")
#: Per-design figures a search can minimise (energy, latency and EDP: geometric mean over networks).
SEARCH_OBJECTIVES = ("edp", "energy_pj", "latency_cycles", "area_mm2", "time_per_token_s", "ttft_s",
                     "energy_per_token_j", "request_latency_s", "energy_per_request_j")
#: The search objectives of transformer steps, and the phase each needs among the networks (None:
#: any step): the geometric mean over the campaign's steps that have the figure.
STEP_OBJECTIVES = {"time_per_token_s": "decode", "ttft_s": "prefill", "energy_per_token_j": None,
                   "request_latency_s": "mix", "energy_per_request_j": "mix"}
_ARCH_KEYS = {"kind", "template", "grid", "dataflows", MEMORY_SHARE_KEY}
_WINDOW_KEYS = {"constraints", "area_budget_mm2", "min_area_fraction"}
_SEARCH_KEYS = {"sampler", "trials", "seed", "objectives", "batch", "prune"}
#: ``[search] prune`` values: "bound" (`sweep.search.grid`), or absent / "none".
PRUNE = ("none", "bound")
#: The most designs ``[search] trials`` asks for.
MAX_TRIALS = 10 ** 7
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_0-9]\w*)+")


@dataclass(frozen=True)
class SearchSpec:
    """The ``[search]`` table: ``sampler`` (`SAMPLERS`), ``trials`` (distinct valid designs to
    evaluate; None = every valid design, grid only), ``seed``, ``objectives`` (`SEARCH_OBJECTIVES`, one or two) and ``batch`` (tpe and
    nsga2: trials asked per round and mapped in parallel; part of the result, as the sampler
    sees the values of a round only after it)."""

    sampler: str = "grid"
    trials: int | None = None
    seed: int = 0
    objectives: tuple[str, ...] = ("edp",)
    batch: int = 4
    prune: str = "none"

    def describe(self) -> dict[str, Any]:
        d = {"sampler": self.sampler, "trials": self.trials, "seed": self.seed,
             "objectives": list(self.objectives), "batch": self.batch}
        if self.prune != "none":  # only where set: the hashes of other searches stay
            d["prune"] = self.prune
        return d


@dataclass(frozen=True)
class DesignSpace:
    """The valid designs of a template grid.

    Attributes:
        template: the `costmodel.loopnest.template.ArchTemplate` (with the campaign's dataflows).
        template_ref: the preset name or file path as the campaign gives it.
        names: the grid's parameter names, sorted (so that the campaign stored in a manifest,
            whose JSON keys are sorted, gives the same designs in the same order: `sweep rerun`).
        axes: name -> the axis values (ascending; ``dataflow``: the names in the grid's order).
        values: (n, len(names)) the valid designs' parameter values, in grid order (the cross
            product of the axes in ``names`` order, last name fastest); a ``dataflow`` column
            holds the index of the name in its axis.
        area_mm2: (n,) each valid design's area, mm^2 (`costmodel.loopnest.physics`).
        dropped: reason -> number of grid points dropped for it.
        total: grid points before dropping.
        gpu_memory_utilization: the share of each design's DRAM a transformer step may fill
            (``[architectures] gpu_memory_utilization``, `costmodel.capacity`; vLLM's 0.9).
    """

    template: Any
    template_ref: str
    names: tuple[str, ...]
    axes: dict[str, tuple]
    values: np.ndarray
    area_mm2: np.ndarray
    dropped: dict[str, int] = field(default_factory=dict)
    total: int = 0
    spec: Any = None
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    _index: Any = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.values)

    def point(self, i: int) -> dict[str, Any]:
        """The parameter values of valid design ``i`` (Python ints where the axis is integral, the
        dataflow's name)."""
        return {n: _py(self.axes[n], v) for n, v in zip(self.names, self.values[i])}

    def index_of(self, point: list) -> int | None:
        """The valid design whose parameter values (in ``names`` order, as `point` gives them)
        are ``point``, or None (not a valid design, or a value off its axis)."""
        if self._index is None:
            object.__setattr__(self, "_index", {tuple(map(float, r)): i for i, r in enumerate(self.values)})
        try:
            return self._index.get(tuple(_code(self.axes[n], v) for n, v in zip(self.names, point)))
        except ValueError:
            return None

    def design_id(self, values: dict[str, Any]) -> str:
        """16 hex digits naming a design: sha256 of the template and the parameter values, and
        with a dataflow its definition (`costmodel.loopnest.template.Dataflow.to_dict`; the hint
        is not in the template's repr)."""
        doc: dict[str, Any] = {"template": repr(self.template.base), "values": values}
        if DATAFLOW in values:
            doc["dataflow"] = self.template.dataflow(values[DATAFLOW]).to_dict()
        return stable_hash(doc, 16)

    def describe(self) -> dict[str, Any]:
        """JSON-able: template (in full), parameters, axes, counts, and with a dataflow axis the
        dataflows' definitions (part of the config hash)."""
        d = {"spec": self.spec, "template": self.template_ref, "template_arch": repr(self.template.base),
             "params": list(self.names),
             "axes": {n: list(a) if n in CATEGORICAL else list(map(_num, a)) for n, a in self.axes.items()},
             "template_values": {n: _num(self.template.template_value(n)) for n in self.names
                                 if n not in CATEGORICAL},
             "designs": len(self), "grid_points": self.total, "dropped": dict(self.dropped)}
        if self.template.dataflows:
            d["dataflows"] = {df.name: df.to_dict() for df in self.template.dataflows}
        return d


def _code(axis: tuple, v) -> float:
    """A parameter value as stored in `DesignSpace.values`: the number, or a name's index in its
    (string) axis; ValueError if a name is not on the axis."""
    return float(axis.index(v)) if isinstance(v, str) else float(v)


def _num(v):
    f = float(v)
    return int(f) if f.is_integer() and not isinstance(v, float) else f


def _py(axis: tuple, v):
    if isinstance(axis[0], str):
        return axis[int(v)]
    return int(v) if all(isinstance(a, int) for a in axis) else float(v)


def _load_template(value: Any, base_dir: Path, bad: Bad):
    from costmodel.loopnest.arch import list_accelerators, load_accelerator
    from costmodel.loopnest.template import ArchTemplate
    if not isinstance(value, str) or not value:
        bad("architectures.template", value, f"expected a preset name {list_accelerators()} or a TOML file path")
        return None
    ref = value if value in list_accelerators() else str(resolve_path(value, base_dir))
    try:
        return ArchTemplate(load_accelerator(ref))
    except (OSError, ValueError) as e:
        bad("architectures.template", value, str(e))
        return None


def _flatten(grid: dict, prefix: str = "") -> dict[str, Any]:
    """Nested TOML tables (``array.D1 = [...]`` is ``{"array": {"D1": [...]}}``) -> dotted names;
    a table that is a range or ``pow2`` stays a leaf."""
    out = {}
    for k, v in grid.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and v and not (set(v) <= {"start", "stop", "step"} or set(v) == {"pow2"}):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _axis(value: Any, key: str, bad: Bad) -> tuple | None:
    """One axis (`sweep.config.archspace.axis_values`, positive numbers) as an ascending tuple
    of distinct values."""
    vals = axis_values(value, key, bad, integer=False)
    return None if vals is None else tuple(sorted(set(vals)))


def _mangle(name: str) -> str:
    return name.replace(".", "__")


def _constraints(cons: Any, names: tuple[str, ...], bad: Bad) -> list:
    """Parsed ``constraints`` (dotted names are mangled to identifiers before parsing)."""
    if not isinstance(cons, list) or not all(isinstance(c, str) for c in cons):
        bad("architectures.grid.constraints", cons, "expected a list of expression strings")
        return []
    known = {_mangle(n) for n in names} | {"area_mm2"}
    trees = []
    for i, text in enumerate(cons):
        bad_names = [m for m in _NAME.findall(text) if m not in names]
        if bad_names:
            bad(f"architectures.grid.constraints[{i}]", text,
                f"unknown name {bad_names[0]!r}; known: {sorted(names) + ['area_mm2']}")
            continue
        try:
            trees.append((i, text, parse(_NAME.sub(lambda m: _mangle(m.group(0)), text), known)))
        except ExprError as e:
            bad(f"architectures.grid.constraints[{i}]", text, str(e))
    return trees


def _dataflows(raw: Any, base, bad: Bad) -> tuple | None:
    """The ``[architectures.dataflows]`` tables as `Dataflow` objects (in the table's order); ()
    when absent, None when unusable (findings go to ``bad``)."""
    from costmodel.loopnest.template import BadDataflow, Dataflow
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        bad("architectures.dataflows", raw, "expected tables [architectures.dataflows.<name>] with spatial "
            "or spatial_hint")
        return None
    out, ok = [], True
    for name, d in raw.items():
        try:
            out.append(Dataflow.from_dict(name, d, base, prefix="architectures.dataflows"))
        except BadDataflow as e:
            bad(e.key, e.value, e.expected)
            ok = False
    return tuple(out) if ok else None


def _dataflow_axis(raw: Any, template, key: str, bad: Bad) -> tuple | None:
    """The ``dataflow`` axis: a non-empty list of distinct names of the template's dataflows (grid
    order kept)."""
    names = [d.name for d in template.dataflows]
    if not names:
        bad(key, raw, "no dataflow is defined: add tables [architectures.dataflows.<name>] with spatial "
            "(a fixed unrolling) or spatial_hint (searched per layer)")
        return None
    return _name_axis(raw, names, "dataflow names", "unknown dataflow; defined in [architectures.dataflows]", key, bad)


def _dram_axis(raw: Any, key: str, bad: Bad) -> tuple | None:
    """The ``dram`` axis of a template whose DRAM is of a kind: a non-empty list of distinct DRAM
    kinds (`costmodel.tech.dram.DRAM_KINDS`), grid order kept."""
    from costmodel.tech.dram import DRAM_KINDS
    return _name_axis(raw, list(DRAM_KINDS), "DRAM kinds", "unknown DRAM kind; known", key, bad)


def _name_axis(raw: Any, names: list[str], what: str, unknown_msg: str, key: str, bad: Bad) -> tuple | None:
    """A categorical axis: a non-empty list of distinct names from ``names`` (grid order kept);
    problems go to ``bad`` naming ``key``."""
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) for x in raw) or len(set(raw)) != len(raw):
        bad(key, raw, f"expected a non-empty list of distinct {what} from {names}")
        return None
    unknown = [x for x in raw if x not in names]
    if unknown:
        bad(key, unknown[0], f"{unknown_msg}: {names}")
        return None
    return tuple(raw)


def _check_values(template, name: str, axis: tuple, key: str, bad: Bad) -> bool:
    from costmodel.loopnest.physics import PhysicsRangeError
    for v in axis:
        try:
            template.check_value(name, v)
        except PhysicsRangeError as e:
            bad(key, v, f"outside the physics model: {e}")
            return False
        except ValueError as e:
            bad(key, v, str(e))
            return False
    return True


#: Grid points beyond which the expansion refuses (build each design: ~10^5 per second).
MAX_GRID_POINTS = 2_000_000


def _expand(template, names: tuple[str, ...], axes: dict[str, tuple], bad: Bad):
    """(values, area, dropped) of every grid point of ``axes`` in ``names`` order that builds a
    design (`DesignSpace`), the invalid ones counted by reason; None after a finding to ``bad``."""
    from costmodel.loopnest.template import InvalidDesign, UnknownParameter
    dropped: dict[str, int] = {}
    pts, areas = [], []
    # one memo for the whole grid (this template only): each value's check, resized memory, DRAM
    # level and memory area is worked out once, not once per grid point (ArchTemplate.design)
    memo: dict = {}
    codes = {n: {i: _code(axes[n], v) for i, v in enumerate(axes[n])} for n in names}
    for idx in itertools.product(*(range(len(axes[n])) for n in names)):
        combo = [axes[n][i] for n, i in zip(names, idx)]
        vals = dict(zip(names, combo))
        try:
            areas.append(template.area_mm2(vals, memo=memo))
        except InvalidDesign as e:
            dropped[e.reason] = dropped.get(e.reason, 0) + 1
            continue
        except UnknownParameter as e:  # pragma: no cover - names were checked above
            bad("architectures.grid", vals, str(e))
            return None
        except ValueError as e:        # e.g. size_kib and size_bits of one memory together
            bad("architectures.grid", vals, str(e))
            return None
        pts.append([codes[n][i] for n, i in zip(names, idx)])
    values = np.asarray(pts, dtype=np.float64).reshape(len(pts), len(names))
    area = np.asarray(areas, dtype=np.float64)
    return values, area, dropped


def parse_design_space(value: dict, base_dir: Path, bad: Bad) -> DesignSpace | None:
    """Resolve an architecture-search ``[architectures]`` table (module docstring); findings go
    to ``bad``; None if unusable."""
    from costmodel.loopnest.template import ArchTemplate
    check_table(value, "architectures", _ARCH_KEYS, bad)
    share = parse_memory_share(value, bad)
    template = _load_template(value.get("template"), base_dir, bad)
    if template is not None:
        dfs = _dataflows(value.get("dataflows"), template.base, bad)
        template = None if dfs is None else ArchTemplate(template.base, dfs)
    grid = value.get("grid")
    if not isinstance(grid, dict) or not grid:
        bad("architectures.grid", grid, "required with a template: a table of parameter -> values, "
            "e.g. array.D1 = [7, 14, 28]")
        return None
    flat = _flatten({k: v for k, v in grid.items() if k not in _WINDOW_KEYS})
    if template is None:
        return None
    known = template.parameter_names()
    names, axes = [], {}
    for name, raw in sorted(flat.items()):   # sorted: the order survives a manifest's sort_keys
        key = f"architectures.grid.{name}"
        if name == DRAM_KIND and name in known:
            axis = _dram_axis(raw, key, bad)
            if axis is not None:
                names.append(name)
                axes[name] = axis
            continue
        if name == DATAFLOW:
            axis = _dataflow_axis(raw, template, key, bad)
            if axis is not None:
                names.append(name)
                axes[name] = axis
            continue
        if name not in known:
            bad(key, raw, f"unknown parameter of template {template.base.name!r}; known: {known}")
            continue
        axis = _axis(raw, key, bad)
        if axis is not None and _check_values(template, name, axis, key, bad):
            names.append(name)
            axes[name] = axis
    if not flat:
        bad("architectures.grid", grid, "no parameter to vary")
    if template.dataflows and DATAFLOW not in flat:
        bad("architectures.dataflows", value.get("dataflows"), "dataflows defined but not searched: add "
            f"dataflow = {[d.name for d in template.dataflows]} to [architectures.grid]")
    trees = _constraints(grid.get("constraints", []), tuple(n for n in flat if n not in CATEGORICAL), bad)
    budget, frac = area_window(grid, bad)
    if len(names) != len(flat) or not names:
        return None
    total = int(np.prod([len(axes[n]) for n in names], dtype=np.int64))
    if total > MAX_GRID_POINTS:
        bad("architectures.grid", {n: flat[n] for n in names},
            f"{total:,} grid points: more than {MAX_GRID_POINTS:,}; use [search] sampler = \"tpe\" or "
            f"\"nsga2\" on a coarser grid, or split the campaign")
        return None
    expanded = _expand(template, tuple(names), axes, bad)
    if expanded is None:
        return None
    values, area, dropped = expanded
    keep = np.ones(len(area), dtype=bool)
    env = {_mangle(n): values[:, j] for j, n in enumerate(names) if n not in CATEGORICAL} | {"area_mm2": area}
    for i, text, tree in trees:
        try:
            ok = np.broadcast_to(np.asarray(evaluate(tree, env), dtype=bool), keep.shape)
        except (ArithmeticError, ValueError, TypeError) as e:
            bad(f"architectures.grid.constraints[{i}]", text, f"cannot be evaluated: {e}")
            return None
        n_fail = int((keep & ~ok).sum())
        if n_fail:
            dropped[f"constraints[{i}]: {text}"] = n_fail
        keep &= ok
    if budget is not None:
        ok = (area <= budget) & (area >= frac * budget)
        if int((keep & ~ok).sum()):
            dropped["area window"] = int((keep & ~ok).sum())
        keep &= ok
    if not keep.any():
        bad("architectures.grid", {n: flat[n] for n in names} | {"constraints": grid.get("constraints", []),
                                                                    "area_budget_mm2": budget},
            f"no valid design: {total:,} grid points, dropped {dropped}")
        return None
    return DesignSpace(template, str(value.get("template")), tuple(names), axes, values[keep], area[keep],
                       dropped, total, spec=_canonical_spec(value, flat), gpu_memory_utilization=share)


def _canonical_spec(value: dict, flat: dict[str, Any]) -> dict[str, Any]:
    """The ``[architectures]`` table as part of the config hash, its grid parameters in one form
    whichever way the file writes them: ``"array.D1" = [7, 14]`` (a quoted key), ``array.D1 = [7,
    14]`` (a dotted key) and ``[architectures.grid.array] D1 = [7, 14]`` are the same parameter, so
    they give the same hash and ``--resume`` accepts either. The form is the nested tables dotted
    keys make (that of the bundled campaigns, whose hashes this keeps)."""
    grid: dict[str, Any] = {k: v for k, v in value["grid"].items() if k in _WINDOW_KEYS}
    for name, v in flat.items():
        *path, leaf = name.split(".")
        node = grid
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = v
    return {**value, "grid": grid}


def check_dataflow_mappers(space: DesignSpace | None, mappers: list, networks: list, bad: Bad) -> None:
    """Check that the campaign's mapper can map every dataflow of the ``dataflow`` axis (nothing
    to check without one): a hint dataflow needs a mapper with a ``spatial`` parameter (loma,
    salsa, random) searching it (``spatial`` not "fixed"); ``spatial = "search"`` needs no fixed
    dataflow (its designs have no hint); and every unique layer of ``networks`` needs an
    unrolling under each hint on the template's array and memories
    (`mappers.spatial.spatial_candidates`; a design of another array or memories where a layer
    has none gives that layer an error row at run time).

    Args:
        space: the `DesignSpace` (None: nothing to check).
        mappers: the campaign's mapper specs (``name``, resolved ``params``); the first is checked.
        networks: the campaign's `costmodel.workload.Network` objects.
        bad: where findings go (keys ``mappers[0].name``, ``mappers[0].params.spatial``,
            ``architectures.dataflows.<name>.spatial_hint``).
    """
    if space is None or DATAFLOW not in space.names or not mappers:
        return
    from mappers import get_mapper
    from mappers.base import LayerProblem
    from mappers.spatial import first_missing
    spec = mappers[0]
    mapper = get_mapper(spec.name)
    searches = mapper.searches_spatial
    layers = list(dict.fromkeys(layer for net in networks for layer, _ in net.unique()))
    for name in space.axes[DATAFLOW]:
        acc = space.template.design({DATAFLOW: name})
        hint = acc.spatial_hint is not None
        if not searches:
            if hint:
                bad("mappers[0].name", spec.name, f"dataflow {name!r} is a spatial_hint, searched per layer: "
                    "use a mapper that searches spatial unrollings (loma, salsa, random)")
            continue
        mode = mapper.spatial_mode(LayerProblem(layers[0], acc, None), spec.params) if layers else "fixed"
        if mode == "fixed" and hint:
            bad("mappers[0].params.spatial", spec.params.get("spatial"), f"dataflow {name!r} is a spatial_hint, "
                "searched per layer: leave spatial out (or \"search\")")
        elif mode == "search" and not hint:
            bad("mappers[0].params.spatial", spec.params.get("spatial"), f"dataflow {name!r} is a fixed unrolling "
                "with no hint to search: leave spatial out")
        elif mode == "search" and (e := first_missing(layers, acc)) is not None:
            bad(f"architectures.dataflows.{name}.spatial_hint", acc.spatial_hint.to_dict(), str(e))


def parse_search(value: Any, n_designs: int | None, bad: Bad) -> SearchSpec:
    """The ``[search]`` table (`SearchSpec`); defaults: grid over every valid design, objective EDP."""
    if value is None:
        return SearchSpec()
    v = check_table(value, "search", _SEARCH_KEYS, bad)
    sampler = v.get("sampler", "grid")
    if sampler not in SAMPLERS:
        bad("search.sampler", sampler, f"expected one of {list(SAMPLERS)}")
        sampler = "grid"
    trials = v.get("trials")
    most = MAX_TRIALS if n_designs is None else min(MAX_TRIALS, n_designs)
    if sampler == "grid" and trials is not None:
        bad("search.trials", trials, "sampler \"grid\" evaluates every valid design; use sampler \"random\" "
            "for a sample")
    elif sampler != "grid" and trials is None:
        bad("search.trials", trials, f"required with sampler {sampler!r}: how many designs to evaluate")
    elif trials is not None and not is_int(trials, 1, most):
        bad("search.trials", trials, f"expected an integer in [1, {most:,}]: how many designs to evaluate"
            + (f" (the campaign has {n_designs:,} valid designs)" if most == n_designs else ""))
        trials = None
    seed = v.get("seed", 0)
    if not check_seed(seed, "search.seed", bad):
        seed = 0
    objs = v.get("objectives", ["edp"])
    if (not isinstance(objs, list) or not 1 <= len(objs) <= 2 or any(o not in SEARCH_OBJECTIVES for o in objs)
            or len(set(objs)) != len(objs)):
        bad("search.objectives", objs, f"expected one or two distinct names of {list(SEARCH_OBJECTIVES)}")
        objs = ["edp"]
    batch = v.get("batch", 4)
    if not is_int(batch, 1, 4096):
        bad("search.batch", batch, "expected an integer in [1, 4096]")
        batch = 4
    prune = v.get("prune", "none")
    if prune not in PRUNE:
        bad("search.prune", prune, f"expected one of {list(PRUNE)}: \"bound\" leaves unmapped the designs whose "
            "lower bounds are beaten on every figure of the answer (grid only)")
        prune = "none"
    elif prune != "none" and sampler != "grid":
        bad("search.prune", prune, f"pruning by bound enumerates the grid: use sampler \"grid\" (not {sampler!r})")
        prune = "none"
    return SearchSpec(sampler, trials, seed, tuple(objs), batch, prune)


def check_step_objectives(search: "SearchSpec | None", networks: list, bad: Bad, workload: Any = None) -> None:
    """A step objective (`STEP_OBJECTIVES`) needs a transformer step of its phase among
    ``networks`` (a request objective: a ``[workload]`` mix); report it through ``bad`` (key
    ``search.objectives``) otherwise."""
    if search is None:
        return
    if search.prune != "none" and not any(n.workload for n in networks):
        bad("search.prune", search.prune, "pruning by bound needs transformer steps among the networks (the figures "
            "it bounds are their times); a CNN grid maps every design")
    for o in search.objectives:
        if o not in STEP_OBJECTIVES:
            continue
        phase = STEP_OBJECTIVES[o]
        if phase == "mix":
            if workload is None:
                bad("search.objectives", list(search.objectives), f"{o} is a figure of a serving mix: add a "
                    "[workload] table (model, prompt, output, batch)")
            continue
        if not any(n.workload and (phase is None or n.workload.get("phase") == phase) for n in networks):
            what = f"a {phase} step" if phase else "a transformer step"
            bad("search.objectives", list(search.objectives), f"{o} needs {what} among the networks, e.g. "
                f"{{model = \"llama3_8b\", phase = \"{phase or 'decode'}\"}}")
