"""Axes of the interactive report's figures, read as the terminal reads its numbers.

* `log_axis`: a log scale whose ticks sit at round values (decades, 1-3, 1-2-5, ...: `_round_ticks`),
  each labelled in full in engineering units by `sweep.common.fmt`
  (``500 uJ``, ``2 ms``, ``1.5 Mcycles``; plain numbers such as ``0.9`` or ``2e+17`` for a unit
  the axis title names), never Plotly's bare ``9``/``8``/``2`` of its minor ticks, nor an SI
  prefix on a unit that has one. Once the user zooms, the page's script picks the ticks of the
  new range among candidates the figure carries (``layout.meta["sweep_ticks"]``, `ZOOM_TICKS`);
* `pad_axis`: the range of a numeric axis widened around its traces' values (`PAD` of the span
  at each end), so that markers on the extremes (a Pareto front's ends) are drawn whole;
* `category_axis`: layers in their order, labels set upright, slanted or vertical by how crowded
  they are (vertical labels let Plotly drop every other one when even those would overlap);
* `gapped`: a mapper's values on the full category list, None where it has no result, so that
  its line breaks there instead of jumping over the layers it skipped.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Iterable

from sweep.common import fmt

__all__ = ["PAD", "ZOOM_TICKS", "category_axis", "gapped", "layer_labels", "log_axis", "pad_axis", "tick_text"]

#: Share of an axis's data span added at each end of its range.
PAD = 0.06

#: Mantissas of the round log ticks, the sets tried coarse to fine (as the PNGs',
#: `sweep.reports.plots.log_ticks`); a zoom candidate's mask has bit k set if it is in set k.
_SETS = ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))

#: The page's script (`sweep.reports.html.write_page`) that re-ticks a zoomed log axis as
#: `_round_ticks` does, among the candidates the figure carries: the figure's own ticks back at
#: its initial range, Plotly's own when no set of candidates has 3 ticks in the new range.
ZOOM_TICKS = """
function sweepZoomTicks(gd) {
  var spec = (gd.layout.meta || {}).sweep_ticks;
  if (!spec) { return; }
  gd.on("plotly_relayout", function (ev) {
    var upd = {};
    Object.keys(spec).forEach(function (ax) {
      var s = spec[ax], r = (gd.layout[ax] || {}).range, moved = Object.keys(ev || {}).some(function (k) {
        return k.indexOf(ax + ".range") === 0 || k === ax + ".autorange";
      });
      if (!moved || !r) { return; }
      var lo = Math.min(r[0], r[1]), hi = Math.max(r[0], r[1]), pick = null;
      if (Math.abs(lo - s.range[0]) < 1e-6 && Math.abs(hi - s.range[1]) < 1e-6) {
        pick = s.initial;
      }
      for (var k = 0; !pick && k < s.sets; k++) {
        var sel = s.vals.map(function (v, i) { return i; }).filter(function (i) {
          var l = Math.log10(s.vals[i]);
          return (s.mask[i] & (1 << k)) && l >= lo - 1e-9 && l <= hi + 1e-9;
        });
        if (sel.length >= 3) {
          var step = Math.ceil(sel.length / s.max);
          sel = sel.filter(function (_, j) { return j % step === 0; });
          pick = {vals: sel.map(function (i) { return s.vals[i]; }), text: sel.map(function (i) { return s.text[i]; })};
        }
      }
      upd[ax + ".tickmode"] = pick ? "array" : "auto";
      upd[ax + ".tickvals"] = pick ? pick.vals : null;
      upd[ax + ".ticktext"] = pick ? pick.text : null;
    });
    if (Object.keys(upd).length) { Plotly.relayout(gd, upd); }
  });
}
"""

#: Tick-label formatters by the unit of an axis's values ("" for a plain number).
_FORMATS = {"pJ": fmt.energy, "J": lambda v: fmt.energy(v * 1e12), "cycles": fmt.cycles, "s": fmt.seconds,
            "": fmt.sig}


def tick_text(v: float, unit: str = "") -> str:
    """``v`` (in ``unit``: "pJ", "J", "cycles", "s", or "" for a plain number) as a tick label:
    `sweep.common.fmt`'s engineering units without trailing zeros (``350 mJ``, ``2.5 ms``, ``1e+17``)."""
    text = _FORMATS[unit](v)
    return re.sub(r"\.(\d*?)0+(?=\D|$)", lambda m: "." + m.group(1) if m.group(1) else "", text)


def _axis_name(fig: Any, axis: str, row: int | None, col: int | None) -> str:
    """The layout key of ``axis`` ("x" or "y") of the subplot at (row, col): "xaxis", "yaxis2", ..."""
    if row is None:
        return f"{axis}axis"
    return getattr(fig.get_subplot(row, col), f"{axis}axis").plotly_name


def _values(fig: Any, name: str, log: bool) -> list[float]:
    """The finite numbers (positive on a log axis) the traces of ``fig`` put on the axis ``name``."""
    axis, ref = name[0], name.replace("axis", "")
    out = []
    for t in fig.data:
        if (getattr(t, f"{axis}axis", None) or axis) != ref:
            continue
        for v in getattr(t, axis, None) or ():
            if isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) and (v > 0 or not log):
                out.append(float(v))
    return out


def _padded(values: list[float], log: bool) -> list[float] | None:
    """[low, high] of ``values`` widened by `PAD` of their span at each end (log10 units on a log
    axis, as Plotly's ``range``); None without values."""
    if not values:
        return None
    lo, hi = min(values), max(values)
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    span = hi - lo
    pad = PAD * span if span > 0 else (0.1 if log else max(abs(lo) * 0.1, 1.0))
    return [lo - pad, hi + pad]


def pad_axis(fig: Any, axis: str, row: int | None = None, col: int | None = None, **props: Any) -> None:
    """Set the range of the linear ``axis`` ("x" or "y") of ``fig`` (its subplot at ``row``,
    ``col``; the only one without) to its traces' values padded (`PAD`), and ``props`` (e.g.
    ``title_text``). Call it once every trace is added."""
    name = _axis_name(fig, axis, row, col)
    rng = _padded(_values(fig, name, False), False)
    fig.layout[name].update(**({"range": rng} if rng else {}), **props)


def _round_ticks(lo: float, hi: float, max_ticks: int) -> list[float]:
    """Round ticks between 10**lo and 10**hi: the coarsest set of `_SETS` with at least 3 ticks
    in that range, every k-th beyond ``max_ticks``; else (a range under a factor of ~1.5) evenly
    spaced ones, the smallest step of 1, 2, 2.5 or 5 times a power of ten that gives at most
    ``max_ticks``."""
    inside = lambda v: lo - 1e-9 <= math.log10(v) <= hi + 1e-9
    for mant in _SETS:
        sel = [v for e in range(math.floor(lo), math.ceil(hi) + 1) for m in mant
               if inside(v := float(f"{m * 10.0 ** e:.12g}"))]
        if len(sel) >= 3:
            return sel[::math.ceil(len(sel) / max_ticks)]
    a, b = 10 ** lo, 10 ** hi
    base = 10.0 ** math.floor(math.log10((b - a) / max_ticks))
    for step in (m * base for m in (1, 2, 2.5, 5, 10, 20, 25, 50)):
        ticks = [float(f"{k * step:.12g}") for k in range(math.ceil(a / step - 1e-9), math.floor(b / step + 1e-9) + 1)]
        if len(ticks) <= max_ticks:
            break
    return ticks


#: The plotting width (px) of a figure spanning the page (its max-width less Plotly's margins), the
#: height (px) Plotly's margins take from a figure, a tick label's character (Plotly's 12 px font)
#: and the least room between two labels (px): what `_crowded` assumes of the drawn page.
_PLOT_WIDTH_PX, _MARGIN_HEIGHT_PX, _CHAR_PX, _LABEL_GAP_PX, _LINE_PX = 1000.0, 180.0, 7.0, 14.0, 16.0


def _axis_px(fig: Any, name: str) -> float:
    """The length (px) the axis ``name`` of ``fig`` is drawn at on the page (`_PLOT_WIDTH_PX`, the
    layout's height, the axis's domain)."""
    dom = fig.layout[name].domain or (0.0, 1.0)
    full = _PLOT_WIDTH_PX if name.startswith("x") else max(fig.layout.height or 450, 200) - _MARGIN_HEIGHT_PX
    return full * (dom[1] - dom[0])


def _crowded(vals: list[float], text: list[str], rng: list[float], px: float, horizontal: bool) -> bool:
    """True if two neighbouring labels of the log ticks ``vals`` (``text``) on an axis of ``px`` pixels
    over ``rng`` (log10) would run into each other: side by side on an x axis (half of each label's
    width plus `_LABEL_GAP_PX`), one line high on a y axis."""
    span = (rng[1] - rng[0]) or 1.0
    for a, b, ta, tb in zip(vals, vals[1:], text, text[1:]):
        gap = (math.log10(b) - math.log10(a)) / span * px
        if gap < ((len(ta) + len(tb)) / 2 * _CHAR_PX + _LABEL_GAP_PX if horizontal else _LINE_PX):
            return True
    return False


def log_axis(fig: Any, axis: str, unit: str = "", row: int | None = None, col: int | None = None,
             max_ticks: int = 6, **props: Any) -> None:
    """Make ``axis`` ("x" or "y") of ``fig`` (its subplot at ``row``, ``col``; the only one
    without) a log axis over its traces' positive values, padded (`PAD`), with at most
    ``max_ticks`` round ticks labelled by `tick_text` in ``unit``, every other one dropped while two
    labels would overlap on the drawn axis (`_crowded`; slanted when even 2 would), zoom candidates
    for the page's script (module docstring), and ``props`` (e.g. ``title_text``). Call it once
    every trace is added."""
    name = _axis_name(fig, axis, row, col)
    rng = _padded(_values(fig, name, True), True)
    if rng is None:
        fig.layout[name].update(type="log", **props)
        return
    vals = _round_ticks(rng[0], rng[1], max_ticks)
    text = [tick_text(v, unit) for v in vals]
    px, horizontal = _axis_px(fig, name), name.startswith("x")
    while len(vals) > 2 and _crowded(vals, text, rng, px, horizontal):
        vals, text = vals[::2], text[::2]
    if horizontal and _crowded(vals, text, rng, px, horizontal):
        props = {"tickangle": -30, **props}
    fig.layout[name].update(type="log", range=rng, tickmode="array", tickvals=vals, ticktext=text, **props)
    cands = [(float(f"{m * 10.0 ** e:.12g}"), sum(1 << k for k, s in enumerate(_SETS) if m in s))
             for e in range(math.floor(rng[0]) - 1, math.ceil(rng[1]) + 1) for m in _SETS[-1]]
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    meta.setdefault("sweep_ticks", {})[name] = {
        "range": rng, "max": max_ticks, "sets": len(_SETS), "initial": {"vals": vals, "text": text},
        "vals": [v for v, _ in cands], "mask": [m for _, m in cands], "text": [tick_text(v, unit) for v, _ in cands]}
    fig.update_layout(meta=meta)


def category_axis(fig: Any, names: list[str], row: int | None = None, col: int | None = None,
                  **props: Any) -> None:
    """Put ``names`` in their order on the x axis of ``fig`` (the subplot at ``row``, ``col``;
    every x axis without), a category axis: labels upright when few and short, slanted when up to 12,
    else vertical and smaller (Plotly then labels every k-th when even those would overlap).
    ``props``: further axis settings (e.g. ``title_text``)."""
    longest = max((len(str(n)) for n in names), default=0)
    if len(names) * (longest + 2) <= 100:
        angle: dict[str, Any] = {"tickangle": 0}
    elif len(names) <= 12:
        angle = {"tickangle": -40}
    else:
        angle = {"tickangle": -90, "tickfont": {"size": 10}}
    sel = {} if row is None else {"row": row, "col": col}
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(names), automargin=True,
                     **angle, **props, **sel)


def layer_labels(df: Any) -> list[str]:
    """The category names of a per-layer axis, ``<layer_index> <layer>``, of every row of ``df``
    (a frame with those columns), in its order."""
    return [f"{int(i)} {n}" for i, n in zip(df["layer_index"], df["layer"])]


def gapped(names: Iterable[str], x: Iterable[str], y: Iterable[Any]) -> list[Any]:
    """The values ``y`` (at the categories ``x``) on every category of ``names``, in that order,
    None where ``x`` has none: a line drawn with ``connectgaps=False`` breaks there."""
    at = dict(zip(x, y))
    return [at.get(n) for n in names]
