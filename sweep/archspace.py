"""The ``[architectures]`` key: a set of J x K systolic hardware points.

Forms (exactly one of them):

* ``preset = "deepopt_table3"``: named points from ``costmodel/presets/systolic.toml``;
* ``file = "points.toml"``: a file holding ``points = [{J = .., K = .., fsram_kib = .., ...}]``;
* ``points = [{J = 32, K = 64, fsram_kib = 16, isram_kib = 32, psram_kib = 8}]``;
* ``[architectures.grid]``: each of J, K, fsram_kib, isram_kib, psram_kib as a list of values, a
  range ``{start, stop, step}`` (stop included) or ``{pow2 = [lo, hi]}``; ``constraints``: a list of
  expressions over those names and ``area_mm2`` (`sweep.expr`); ``area_budget_mm2`` with
  ``min_area_fraction`` keeps points with ``fraction * budget <= area <= budget``.

Every point gets its area from `costmodel.area.area_mm2`. The result is a `costmodel.hwpoints.SystolicPoints` of columns
in a fixed, deterministic order (J, K, fsram, isram, psram ascending).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable

import numpy as np

from costmodel.hwpoints import HW_COLUMNS, SystolicPoints
from sweep.expr import ExprError, evaluate, parse

__all__ = ["parse_architectures"]

_ARCH_KEYS = {"kind", "preset", "file", "points", "grid"}
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


def _axis(value: Any, key: str, bad) -> np.ndarray | None:
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
    if not vals or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vals):
        bad(key, value, "values must be positive integers")
        return None
    return np.unique(np.asarray(vals, dtype=np.int64))


def _grid(grid: Any, bad) -> tuple[dict[str, np.ndarray] | None, dict]:
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
    budget = grid.get("area_budget_mm2")
    frac = grid.get("min_area_fraction", 0.0)
    if budget is not None and (not isinstance(budget, (int, float)) or isinstance(budget, bool) or budget <= 0):
        bad("architectures.grid.area_budget_mm2", budget, "expected a positive number (mm^2)")
        budget = None
    if not isinstance(frac, (int, float)) or isinstance(frac, bool) or not 0 <= frac <= 1:
        bad("architectures.grid.min_area_fraction", frac, "expected a number in [0, 1]")
        frac = 0.0
    if frac and budget is None:
        bad("architectures.grid.min_area_fraction", frac, "needs area_budget_mm2")
    if len(axes) != len(HW_COLUMNS):
        return None, {}
    mesh = np.meshgrid(*(axes[c] for c in HW_COLUMNS), indexing="ij")
    cols = {c: m.ravel() for c, m in zip(HW_COLUMNS, mesh)}
    from costmodel.area import area_mm2
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


def parse_architectures(value: Any, base_dir: Path, bad: Callable[[str, Any, str], None]) -> SystolicPoints | None:
    """Resolve the ``[architectures]`` table to a `costmodel.hwpoints.SystolicPoints`; problems go to ``bad``."""
    from costmodel.presets import systolic_presets

    if not isinstance(value, dict):
        bad("architectures", value, "required: a table with one of preset, file, points or grid")
        return None
    for k in value:
        if k not in _ARCH_KEYS:
            bad(f"architectures.{k}", value[k], f"unknown key; known: {sorted(_ARCH_KEYS)}")
    kind = value.get("kind", "systolic")
    if kind != "systolic":
        bad("architectures.kind", kind, "expected 'systolic' (the only architecture kind so far)")
        return None
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
        path = Path(f) if Path(f).is_absolute() else base_dir / f
        try:
            data = tomllib.loads(path.read_text())
        except OSError as e:
            bad("architectures.file", f, f"cannot read {path}: {e.strerror}")
            return None
        except tomllib.TOMLDecodeError as e:
            bad("architectures.file", f, f"{path} is not valid TOML: {e}")
            return None
        cols = _from_points(data.get("points"), f"{path}:points", bad)
        spec = {"file": f, "points": data.get("points")}
    elif form == "points":
        cols = _from_points(value["points"], "architectures.points", bad)
    else:
        cols, _ = _grid(value["grid"], bad)
    if cols is None:
        return None
    from costmodel.area import area_mm2
    order = np.lexsort(tuple(cols[c] for c in reversed(HW_COLUMNS)))
    cols = {c: v[order] for c, v in cols.items()}
    area = np.asarray(area_mm2(*(cols[c] for c in HW_COLUMNS)), dtype=np.float64)
    return SystolicPoints(**cols, area_mm2=np.atleast_1d(area), spec=spec)
