"""The ``[architectures]`` key: a set of J x K systolic hardware points, or loop-nest / multi-NPU accelerators.

``kind = "systolic"`` (the default), forms (exactly one of them):

* ``preset = "deepopt_table3"``: named points from ``costmodel/presets/systolic.toml``;
* ``file = "points.toml"``: a file holding ``points = [{J = .., K = .., fsram_kib = .., ...}]``;
* ``points = [{J = 32, K = 64, fsram_kib = 16, isram_kib = 32, psram_kib = 8}]``;
* ``[architectures.grid]``: each of J, K, fsram_kib, isram_kib, psram_kib as a list of values, a
  range ``{start, stop, step}`` (stop included) or ``{pow2 = [lo, hi]}``; ``constraints``: a list of
  expressions over those names and ``area_mm2`` (`sweep.config.expr`); ``area_budget_mm2`` with
  ``min_area_fraction`` keeps points with ``fraction * budget <= area <= budget``.

Every point gets its area from `costmodel.systolic.area.area_mm2`. The result is a `costmodel.systolic.points.SystolicPoints` of columns
in a fixed, deterministic order (J, K, fsram, isram, psram ascending).

``kind = "loopnest"`` (accelerators with a memory hierarchy, `costmodel.loopnest.arch`) or
``kind = "npu"`` (Flexer's multi-NPU architectures, `costmodel.npu`): ``presets`` and/or ``files``,
and for loopnest an optional ``spatial`` unrolling override and ``gpu_memory_utilization`` (the
share of each accelerator's DRAM a transformer step may fill, in (0, 1]; vLLM's default 0.9,
`costmodel.capacity`; `parse_memory_share`); the result is an `ArchSet`.
"""

from __future__ import annotations

from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from costmodel.capacity import GPU_MEMORY_UTILIZATION, check_memory_utilization
from costmodel.systolic.points import HW_COLUMNS, SystolicPoints
from sweep.config.validation import NOT_FINITE, is_finite, is_number, read_toml_file, resolve_path
from sweep.config.expr import ExprError, evaluate, parse

__all__ = ["parse_points", "parse_archset", "ArchSet", "axis_values", "area_window", "parse_memory_share",
           "MEMORY_SHARE_KEY"]

_ARCH_KEYS = {"kind", "preset", "file", "points", "grid"}
#: The key of ``[architectures]`` (loop-nest sets and architecture searches) that sets the share of
#: each DRAM a transformer step may fill (`costmodel.capacity`; a serving campaign's is
#: ``[serving.scheduler] gpu_memory_utilization``, the same meaning and default).
MEMORY_SHARE_KEY = "gpu_memory_utilization"
_ARCHSET_KEYS = {"kind", "presets", "files", "spatial", MEMORY_SHARE_KEY}  # kinds "loopnest" and "npu" ("spatial", the share: loopnest only)
_GRID_KEYS = set(HW_COLUMNS) | {"constraints", "area_budget_mm2", "min_area_fraction"}


def _from_points(points: Any, key: str, bad) -> dict[str, np.ndarray] | None:
    if not isinstance(points, list) or not points:
        bad(key, points, "expected a non-empty list of tables {J, K, fsram_kib, isram_kib, psram_kib}")
        return None
    cols = {c: [] for c in HW_COLUMNS}
    ok = True
    for i, pt in enumerate(points):
        if not isinstance(pt, dict) or set(pt) != set(HW_COLUMNS):
            bad(f"{key}[{i}]", pt, f"expected exactly the keys {list(HW_COLUMNS)}")
            ok = False
            continue
        for c in HW_COLUMNS:
            v = pt[c]
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                bad(f"{key}[{i}].{c}", v, "expected a positive integer")
                ok = False
            cols[c].append(v)
    return {c: np.asarray(v, dtype=np.int64) for c, v in cols.items()} if ok else None


def axis_values(value: Any, key: str, bad, integer: bool = True) -> list | None:
    """The values of one grid axis: a list, ``{start, stop, step}`` (integers, stop included) or
    ``{pow2 = [lo, hi]}``; positive integers (``integer``) or positive finite numbers. None (and a
    finding at ``key``) if unusable. Shared by the systolic grid and architecture-search grids."""
    vals = None
    if isinstance(value, list) and value:
        vals = value
    elif isinstance(value, dict) and set(value) == {"start", "stop", "step"}:
        s, e, st = value["start"], value["stop"], value["step"]
        if all(isinstance(x, int) and not isinstance(x, bool) for x in (s, e, st)) and st > 0 and e >= s:
            vals = list(range(s, e + 1, st))
        else:
            bad(key, value, "range needs integers start <= stop and step > 0")
            return None
    elif isinstance(value, dict) and set(value) == {"pow2"}:
        lo_hi = value["pow2"]
        if (isinstance(lo_hi, list) and len(lo_hi) == 2 and all(isinstance(x, int) and x > 0 for x in lo_hi)
                and lo_hi[0] <= lo_hi[1]):
            lo, hi = lo_hi
            vals = [2**k for k in range(64) if lo <= 2**k <= hi]
        else:
            bad(key, value, "pow2 needs [lo, hi] with 0 < lo <= hi")
            return None
    else:
        bad(key, value, "expected a list of values, {start, stop, step} or {pow2 = [lo, hi]}")
        return None
    kind = int if integer else (int, float)
    if not vals or not all(isinstance(v, kind) and not isinstance(v, bool) and v > 0 for v in vals):
        bad(key, value, "values must be positive integers" if integer else "values must be positive numbers")
        return None
    if not integer and not all(is_finite(v) for v in vals):
        bad(key, value, NOT_FINITE)
        return None
    return vals


def _axis(value: Any, key: str, bad) -> np.ndarray | None:
    vals = axis_values(value, key, bad)
    return None if vals is None else np.unique(np.asarray(vals, dtype=np.int64))


def area_window(grid: dict, bad) -> tuple[float | None, float]:
    """``area_budget_mm2`` (None: no budget) and ``min_area_fraction`` of a grid (the systolic or
    an architecture-search one): points keep ``fraction * budget <= area <= budget``. NaN and
    infinities are refused."""
    budget = grid.get("area_budget_mm2")
    frac = grid.get("min_area_fraction", 0.0)
    if is_number(budget) and not is_finite(budget):
        bad("architectures.grid.area_budget_mm2", budget, NOT_FINITE)
        budget = None
    elif budget is not None and (not is_number(budget) or budget <= 0):
        bad("architectures.grid.area_budget_mm2", budget, "expected a positive number (mm^2)")
        budget = None
    if is_number(frac) and not is_finite(frac):
        bad("architectures.grid.min_area_fraction", frac, NOT_FINITE)
        frac = 0.0
    elif not is_number(frac) or not 0 <= frac <= 1:
        bad("architectures.grid.min_area_fraction", frac, "expected a number in [0, 1]")
        frac = 0.0
    if frac and budget is None:
        bad("architectures.grid.min_area_fraction", frac, "needs area_budget_mm2")
    return budget, frac


def _grid(grid: Any, bad) -> tuple[dict[str, np.ndarray] | None, dict]:
    """``[architectures.grid]``: the axes' cross product, filtered by the constraints and the area window."""
    if not isinstance(grid, dict):
        bad("architectures.grid", grid, "expected a table")
        return None, {}
    for k in grid:
        if k not in _GRID_KEYS:
            bad(f"architectures.grid.{k}", grid[k], f"unknown key; known: {sorted(_GRID_KEYS)}")
    axes = {}
    for c in HW_COLUMNS:
        if c not in grid:
            bad(f"architectures.grid.{c}", None, "required")
            continue
        a = _axis(grid[c], f"architectures.grid.{c}", bad)
        if a is not None:
            axes[c] = a
    cons = grid.get("constraints", [])
    trees = []
    if not isinstance(cons, list) or not all(isinstance(c, str) for c in cons):
        bad("architectures.grid.constraints", cons, "expected a list of expression strings")
        cons = []
    for i, c in enumerate(cons):
        try:
            trees.append((i, c, parse(c, set(HW_COLUMNS) | {"area_mm2"})))
        except ExprError as e:
            bad(f"architectures.grid.constraints[{i}]", c, str(e))
    budget, frac = area_window(grid, bad)
    if len(axes) != len(HW_COLUMNS):
        return None, {}
    mesh = np.meshgrid(*(axes[c] for c in HW_COLUMNS), indexing="ij")
    cols = {c: m.ravel() for c, m in zip(HW_COLUMNS, mesh)}
    from costmodel.systolic.area import area_mm2
    area = np.asarray(area_mm2(*(cols[c] for c in HW_COLUMNS)), dtype=np.float64)
    env = dict(cols, area_mm2=area)
    keep = np.ones(len(area), dtype=bool)
    for i, text, tree in trees:
        try:
            keep &= np.broadcast_to(np.asarray(evaluate(tree, env), dtype=bool), keep.shape)
        except (ArithmeticError, ValueError, TypeError) as e:
            bad(f"architectures.grid.constraints[{i}]", text, f"cannot be evaluated: {e}")
    if budget is not None:
        keep &= (area <= budget) & (area >= frac * budget)
    if not keep.any():
        bad("architectures.grid", {k: grid[k] for k in grid if k != "constraints"} | {"constraints": cons},
            "no hardware point satisfies the constraints")
    out = {c: v[keep] for c, v in cols.items()}
    return out, {"grid": grid}


def parse_points(value: Any, base_dir: Path,
                 bad: Callable[[str, Any, str], None]) -> SystolicPoints | None:
    """Resolve the ``[architectures]`` table of a systolic campaign (``kind = "systolic"``, the
    default) to a `costmodel.systolic.points.SystolicPoints`; None if unusable. Findings go to ``bad``."""
    from costmodel.presets import systolic_presets

    if not isinstance(value, dict):
        bad("architectures", value, "required: a table with one of preset, file, points or grid")
        return None
    for k in value:
        if k not in _ARCH_KEYS:
            bad(f"architectures.{k}", value[k], f"unknown key; known: {sorted(_ARCH_KEYS)}")
    forms = [k for k in ("preset", "file", "points", "grid") if k in value]
    if len(forms) != 1:
        bad("architectures", {k: value[k] for k in forms},
            "give exactly one of preset, file, points or grid")
        return None
    form = forms[0]
    cols = None
    spec: Any = {form: value[form]}
    if form == "preset":
        presets = systolic_presets()
        name = value["preset"]
        if name not in presets:
            bad("architectures.preset", name, f"unknown preset; known: {sorted(presets)}")
            return None
        cols = _from_points(presets[name]["points"], "architectures.preset", bad)
    elif form == "file":
        f = value["file"]
        if not isinstance(f, str):
            bad("architectures.file", f, "expected a path string")
            return None
        path = resolve_path(f, base_dir)
        data = read_toml_file(path, "architectures.file", f, bad)
        if data is None:
            return None
        cols = _from_points(data.get("points"), f"{path}:points", bad)
        spec = {"file": f, "points": data.get("points")}
    elif form == "points":
        cols = _from_points(value["points"], "architectures.points", bad)
    else:
        cols, _ = _grid(value["grid"], bad)
    if cols is None:
        return None
    from costmodel.systolic.area import area_mm2
    order = np.lexsort(tuple(cols[c] for c in reversed(HW_COLUMNS)))
    cols = {c: v[order] for c, v in cols.items()}
    area = np.asarray(area_mm2(*(cols[c] for c in HW_COLUMNS)), dtype=np.float64)
    return SystolicPoints(**cols, area_mm2=np.atleast_1d(area), spec=spec)


def parse_memory_share(value: dict, bad) -> float:
    """``[architectures] gpu_memory_utilization``: the share of each DRAM a transformer step may
    fill, a number in (0, 1] (`costmodel.capacity.check_memory_utilization`); the default (vLLM's
    0.9, `costmodel.capacity.GPU_MEMORY_UTILIZATION`) when absent or bad (a finding naming the key)."""
    if MEMORY_SHARE_KEY not in value:
        return GPU_MEMORY_UTILIZATION
    try:
        return check_memory_utilization(value[MEMORY_SHARE_KEY])
    except ValueError as e:
        bad(f"architectures.{MEMORY_SHARE_KEY}", value[MEMORY_SHARE_KEY], str(e).split(": ", 1)[-1])
        return GPU_MEMORY_UTILIZATION


@dataclass(frozen=True)
class ArchSet:
    """The accelerators of a ``kind = "loopnest"`` campaign ((name, `costmodel.loopnest.arch.Accelerator`)
    pairs) or of a ``kind = "npu"`` one ((name, `costmodel.npu.NPUArch`) pairs), an optional
    spatial unrolling override (loopnest only; None = each accelerator's default) and the share of
    each DRAM a transformer step may fill (``gpu_memory_utilization``, `costmodel.capacity`)."""

    archs: tuple
    spatial: Any = None
    spec: Any = None
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION

    def __len__(self) -> int:
        return len(self.archs)

    def describe(self) -> dict[str, Any]:
        """JSON-able: names and full descriptions (so a changed preset changes the config hash)."""
        return {"spec": self.spec,
                "archs": [{"name": n, "arch": repr(a)} for n, a in self.archs]}


def parse_spatial(value: Any, key: str, bad):
    """``{D1 = [["OX", 14]], D2 = [["FY", 3], ["K", 4]]}`` -> a `SpatialMapping`, or None."""
    from costmodel.loopnest.mapping import SpatialMapping
    from costmodel.workload import LOOP_DIMS
    if not isinstance(value, dict) or not value:
        bad(key, value, "expected a table: array dim -> list of [loop dim, factor]")
        return None
    out = {}
    ok = True
    for adim, loops in value.items():
        if not isinstance(loops, list) or not all(
                isinstance(l, list) and len(l) == 2 and l[0] in LOOP_DIMS and isinstance(l[1], int)
                and not isinstance(l[1], bool) and l[1] >= 1 for l in loops):
            bad(f"{key}.{adim}", loops, f"expected a list of [loop dim, factor >= 1], loop dims {list(LOOP_DIMS)}")
            ok = False
            continue
        out[adim] = tuple((str(d), int(f)) for d, f in loops)
    if not ok:
        return None
    try:
        return SpatialMapping(out)
    except (TypeError, ValueError) as e:
        bad(key, value, str(e))
        return None


def _check_spatial_fits(spatial, archs, raw, bad) -> None:
    """An override spatial unrolling must fit every accelerator's array: each of its array dims
    exists and its fan-out (product of the factors) is at most the dim's size; otherwise no
    mapping of any layer fits that accelerator."""
    for name, acc in archs:
        for adim in spatial.dims:
            if adim not in acc.array:
                bad(f"architectures.spatial.{adim}", raw[adim], f"accelerator {name!r} has no array dim "
                    f"{adim!r}; its dims are {dict(acc.array)}: no mapping fits")
            elif spatial.array_fanout(adim) > acc.array[adim]:
                bad(f"architectures.spatial.{adim}", raw[adim], f"fan-out {spatial.array_fanout(adim)} exceeds "
                    f"{adim} = {acc.array[adim]} of accelerator {name!r}: no mapping fits")


def _load_files(files: list[str], load: Callable[[Any], Any], base_dir: Path, bad) -> list[tuple[str, Any]]:
    """(name, architecture) of each of ``files`` (``architectures.files``) that loads; findings for the others."""
    out = []
    for i, f in enumerate(files):
        try:
            arch = load(resolve_path(f, base_dir))
        except (OSError, ValueError, TypeError, KeyError) as e:  # costmodel.npu.load_npu: KeyError, TypeError too
            bad(f"architectures.files[{i}]", f, str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e))
            continue
        out.append((arch.name, arch))
    return out


def parse_archset(value: dict, base_dir: Path, bad, list_presets: Callable[[], list[str]],
                  load: Callable[[Any], Any], what: str, spatial: bool) -> ArchSet | None:
    """The ``[architectures]`` table of a campaign that maps layers on named architectures
    (``kind = "loopnest"``: accelerators with a memory hierarchy; ``"npu"``: Flexer's multi-NPU
    presets arch1..arch8): ``presets`` (names, see `sweep list archs`) and/or ``files`` (TOML
    files), each loaded by ``load`` (presets listed by ``list_presets``; ``what`` names one in
    messages), and a ``spatial`` override if the kind has one (``spatial``)."""
    kind = value.get("kind")
    for k in value:
        if k not in _ARCHSET_KEYS:
            bad(f"architectures.{k}", value[k], f"unknown key for kind {kind!r}; known: {sorted(_ARCHSET_KEYS)}")
    presets = value.get("presets", [])
    files = value.get("files", [])
    if not isinstance(presets, list) or not all(isinstance(p, str) for p in presets):
        bad("architectures.presets", presets, "expected a list of preset names")
        presets = []
    if not isinstance(files, list) or not all(isinstance(p, str) for p in files):
        bad("architectures.files", files, "expected a list of file paths")
        files = []
    if not presets and not files:
        bad("architectures", value, f"kind {kind!r} needs presets = [...] and/or files = [...]")
        return None
    known = list_presets()
    archs = []
    for i, name in enumerate(presets):
        if name not in known:
            bad(f"architectures.presets[{i}]", name, f"unknown {what}; known: {known}")
            continue
        archs.append((name, load(name)))
    archs += _load_files(files, load, base_dir, bad)
    names = [n for n, _ in archs]
    if len(set(names)) != len(names):
        bad("architectures", value, f"{what} names must be unique, got {names}")
    override = None
    if MEMORY_SHARE_KEY in value and not spatial:
        bad(f"architectures.{MEMORY_SHARE_KEY}", value[MEMORY_SHARE_KEY], f"not used by kind {kind!r} (no DRAM "
            "capacity is checked on it)")
    share = parse_memory_share(value, bad)
    if "spatial" in value:
        if not spatial:
            bad("architectures.spatial", value["spatial"], f"not used by kind {kind!r}")
        else:
            override = parse_spatial(value["spatial"], "architectures.spatial", bad)
            if override is not None:
                _check_spatial_fits(override, archs, value["spatial"], bad)
    return ArchSet(tuple(archs), override, spec={k: value[k] for k in value}, gpu_memory_utilization=share)
