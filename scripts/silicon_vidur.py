"""Our GPU presets against Vidur's measured A100 kernels (sweep/commands/silicon_vidur.py): every
operation of a Llama-3-8B / 70B block at TP 1-8 and 1-32,768 tokens, FlashInfer attention, and the
Llama-3-8B decode / prefill steps as sums of their kernels; MAPE per class and size band.

    python scripts/silicon_vidur.py                       # on a100_pcie (where Vidur's compute ran), ~70 s
    python scripts/silicon_vidur.py --arch a100           # the SXM4 part instead
    python scripts/silicon_vidur.py --every               # every point
    python scripts/silicon_vidur.py --markdown > t.md     # the tables of docs/silicon.md

Kernel times, no host cost (the like-for-like of Vidur's profiler); nothing is fitted to them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sweep.commands.silicon_vidur import class_summary, compare_vidur  # noqa: E402

DATA = ROOT / "tests" / "data" / "vidur_a100"
ATTENTION = ROOT / "tests" / "data" / "peers_serving" / "vidur_a100_llama3_8b_attention_subset.csv"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="a100_pcie", help="a preset with a [gpu] table (default a100_pcie)")
    ap.add_argument("--mapper", default="salsa", help="loop-nest mapper for the GEMMs' floor (default salsa)")
    ap.add_argument("--every", action="store_true", help="print every point")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        rows = compare_vidur(DATA, ATTENTION, arch=a.arch, mapper=a.mapper,
                             progress=lambda i, n, s: print(f"\r{i}/{n} {s:50.50s}", end="", file=sys.stderr))
    except ValueError as e:
        print(f"\nerror: {e}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    sep, md = (" | ", "| ") if a.markdown else ("  ", "")
    end = " |" if a.markdown else ""
    if a.every:
        print(md + sep.join(["class", "point", "measured us", "ours us", "ours / measured", "binds ours"]) + end)
        if a.markdown:
            print("|---|---|---:|---:|---:|---|")
        for r in rows:
            print(md + sep.join([r["cls"], r["label"], f"{r['measured_s'] * 1e6:.1f}", f"{r['ours_s'] * 1e6:.1f}",
                                 f"{r['ratio']:.3f}", r["bound"]]) + end)
        print()
    print(f"{a.arch}, {a.mapper}, {time.perf_counter() - t0:.0f} s\n")
    print(md + sep.join(["class", "points", "MAPE %", "geomean ours / measured", "max abs error %", "> 15% off"]) + end)
    if a.markdown:
        print("|---|---:|---:|---:|---:|---:|")
    for s in class_summary(rows):
        print(md + sep.join([s["cls"], str(s["points"]), f"{s['mape']:.1f}", f"{s['geomean']:.3f}",
                             f"{s['max_error']:.1f}", str(s["over_15"])]) + end)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
