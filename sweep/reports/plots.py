"""The one plot helper of `sweep report`: figures on the Agg backend, readable log axes and
category ticks, and PNGs written at one fixed dpi.

    fig, ax = figure(figsize=(6, 4))
    ax.plot(...)
    log_axis(ax, "y")
    path = save(fig, plots_dir / "name.png", title="What the figure shows")
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DPI", "category_ticks", "figure", "log_axis", "log_ticks", "pyplot", "rotate_xticklabels", "save"]

#: Resolution of every PNG `sweep report` writes.
DPI = 110


def pyplot():
    """`matplotlib.pyplot` on the non-interactive Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def figure(nrows: int = 1, ncols: int = 1, **kwargs):
    """A new figure and its axes: `plt.subplots(nrows, ncols, **kwargs)` on the Agg backend."""
    return pyplot().subplots(nrows, ncols, **kwargs)


def save(fig, path: str | Path, title: str | None = None) -> str:
    """Give ``fig`` the suptitle ``title`` (if any), tight-layout it, write it as a PNG at `DPI`
    (the canvas grown to whatever sticks out, e.g. a legend beside the axes), close it and return
    the path written."""
    plt = pyplot()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    return str(path)


def _log_formatter():
    """Log-axis tick labels: plain numbers (``0.05``, ``1.5``, ``200``) when every tick of the axis
    is in [1e-4, 1e5), else all as ``2x10^6`` (``10^6`` for a power of ten)."""
    from matplotlib.ticker import Formatter

    class _Formatter(Formatter):
        plain = True

        def set_locs(self, locs):
            super().set_locs(locs)
            shown = [v for v in locs if v > 0 and math.isfinite(v)]
            self.plain = all(1e-4 <= v < 1e5 for v in shown)

        def __call__(self, v, pos=None):
            if not (v > 0 and math.isfinite(v)):
                return ""
            if self.plain:
                return f"{v:.6g}"
            e = math.floor(math.log10(v) + 1e-9)
            m = float(f"{v / 10.0 ** e:.3g}")
            return f"$10^{{{e}}}$" if m == 1.0 else f"${m:g}{{\\times}}10^{{{e}}}$"

    return _Formatter()


#: Mantissas of the candidate log ticks, coarse to fine.
_MANTISSAS = ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))


def log_ticks(vmin: float, vmax: float, max_ticks: int = 6) -> list[float]:
    """At most ``max_ticks`` major ticks in [vmin, vmax] on a log axis: the coarsest of decades,
    1-3, 1-2-5 or 1-1.5-2-...-9 steps that gives 3 ticks (every k-th decade when the axis spans
    many), else evenly spaced linear steps (a span under a factor of ~1.5)."""
    from matplotlib.ticker import MaxNLocator

    vmin, vmax = sorted((float(vmin), float(vmax)))
    if not (vmax > 0 and math.isfinite(vmax)):
        return []
    vmin = vmin if vmin > 0 else vmax / 1e3
    lo, hi = math.floor(math.log10(vmin)) - 1, math.ceil(math.log10(vmax)) + 1
    inside = lambda t: vmin * (1 - 1e-9) <= t <= vmax * (1 + 1e-9)
    prev: list[float] = []
    for mant in _MANTISSAS:
        ticks = [float(f"{m * 10.0 ** e:.12g}") for e in range(lo, hi + 1) for m in mant]
        ticks = [t for t in ticks if inside(t)]
        if len(ticks) >= 3:
            if len(ticks) <= max_ticks:
                return ticks
            if len(prev) >= 2:
                return prev
            step = math.ceil(len(ticks) / max_ticks)
            return ticks[::step]
        prev = ticks
    lin = MaxNLocator(nbins=max(max_ticks - 1, 2), steps=[1, 2, 2.5, 5, 10]).tick_values(vmin, vmax)
    return sorted({float(f"{t:.12g}") for t in lin if t > 0 and inside(t)})


def _log_locator(max_ticks: int):
    from matplotlib.ticker import Locator

    class _Locator(Locator):
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return log_ticks(vmin, vmax, max_ticks)

    return _Locator()


def log_axis(ax, which: str = "y", max_ticks: int = 6) -> None:
    """Log scale on ``which`` ("x", "y" or "both") of ``ax`` with few, plain-number major labels
    (`log_ticks`) and unlabelled minor ticks, so that labels never crowd or overlap."""
    from matplotlib.ticker import NullFormatter

    for name in ("x", "y") if which == "both" else (which,):
        axis = ax.xaxis if name == "x" else ax.yaxis
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        axis.set_major_locator(_log_locator(max_ticks))
        axis.set_major_formatter(_log_formatter())
        axis.set_minor_formatter(NullFormatter())


def rotate_xticklabels(ax, rotation: float = 30, fontsize: float | None = None) -> None:
    """Slant the x tick labels of ``ax`` (anchored at their right end, under their tick)."""
    for lab in ax.get_xticklabels():
        lab.set_rotation(rotation)
        lab.set_horizontalalignment("right" if 0 < rotation < 90 else "center")
        lab.set_rotation_mode("anchor" if 0 < rotation < 90 else "default")
        if fontsize:
            lab.set_fontsize(fontsize)


def category_ticks(ax, labels: Sequence[str], max_labels: int = 60) -> None:
    """Label x positions 0..n-1 of ``ax`` with ``labels`` (e.g. layer names): upright when few and
    short, else vertical and smaller; every k-th label only beyond ``max_labels``."""
    n = len(labels)
    step = max(1, math.ceil(n / max_labels))
    pos = list(range(0, n, step))
    ax.set_xticks(pos, [str(labels[i]) for i in pos])
    ax.set_xticks(range(n), minor=True)
    longest = max((len(str(l)) for l in labels), default=0)
    if len(pos) * max(longest, 1) > 60:  # would run into each other upright
        rotate_xticklabels(ax, 90, fontsize=7 if len(pos) > 20 else 8)
