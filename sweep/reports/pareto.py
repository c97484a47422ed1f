"""Pareto fronts and area budgets for `sweep report` (lower is better in every column).

    front = pareto_front(np.column_stack([area_mm2, edp]))   # row indices of the non-dominated points
    budgets = even_budgets(area_mm2, 6)                       # 6 budgets, min .. max area (mm^2)

A point *dominates* another when it is no worse in every column and strictly better in at least
one; the front is the set of points no other point dominates (identical points do not dominate
each other, so duplicates on the front are all kept).
"""

from __future__ import annotations

import numpy as np

__all__ = ["even_budgets", "pareto_front"]


def pareto_front(points) -> np.ndarray:
    """Row indices of the non-dominated rows of ``points`` (n x k, every column minimised), in
    lexicographic order of the rows (first column ascending, then the next, ...).

    Rows with a NaN or infinite value are never on the front (and dominate nothing). O(n log n)
    for two columns; for more, each row is checked against the front found so far (a dominating
    row always comes earlier in lexicographic order, and by transitivity some front row then
    dominates too)."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2:
        raise ValueError(f"pareto_front: expected an n x k array, got shape {pts.shape}")
    finite = np.flatnonzero(np.isfinite(pts).all(axis=1))
    if finite.size == 0:
        return np.zeros(0, dtype=np.int64)
    sub = pts[finite]
    order = np.lexsort(sub.T[::-1])  # by column 0, then 1, ...
    sub = sub[order]
    keep = _front_2d(sub) if sub.shape[1] == 2 else _front_nd(sub)
    return finite[order[keep]].astype(np.int64)


def _front_2d(s: np.ndarray) -> np.ndarray:
    """Front positions of lexicographically sorted 2-column rows: per run of equal x, the rows at
    the run's smallest y, when that y is strictly below every y of a smaller x."""
    keep = []
    best_before = np.inf
    i, n = 0, len(s)
    while i < n:
        j = i
        while j < n and s[j, 0] == s[i, 0]:
            j += 1
        y_min = s[i, 1]  # sorted: the run's first row has its smallest y
        if y_min < best_before:
            keep.extend(k for k in range(i, j) if s[k, 1] == y_min)
            best_before = y_min
        i = j
    return np.asarray(keep, dtype=np.int64)


def _front_nd(s: np.ndarray) -> np.ndarray:
    """Front positions of lexicographically sorted rows with any number of columns."""
    keep: list[int] = []
    front = np.empty((0, s.shape[1]))
    for i, p in enumerate(s):
        if len(front):
            le = (front <= p).all(axis=1)
            lt = (front < p).any(axis=1)
            if (le & lt).any():
                continue
        keep.append(i)
        front = np.vstack([front, p])
    return np.asarray(keep, dtype=np.int64)


def even_budgets(values, n: int = 6) -> list[float]:
    """``n`` budgets evenly spaced from the smallest to the largest finite value (both included;
    one budget when they are equal, none without a finite value)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return []
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        return [hi]
    out = [float(b) for b in np.linspace(lo, hi, n)]
    out[-1] = hi  # exactly the largest: the design of the largest area is within the last budget
    return out
