"""Our NCCL all-reduce model against the measured A100 all-reduces (costmodel/system/nccl_check.py).

Per set and GPU count: points, MAPE, the largest error, points more than 15% off; per size band
(< 64 KiB, 64 KiB-1 MiB, 1-16 MiB, >= 16 MiB) the mean of ours and of the measured times, and the
band's miss in its two measured parts (the least-squares line's intercept, us, and its slope as a bus
bandwidth, GB/s, measured beside ours).

Usage:
    python scripts/silicon_allreduce.py                 # plain tables
    python scripts/silicon_allreduce.py --markdown      # Markdown tables
    python scripts/silicon_allreduce.py --every         # also every point (set, gpus, bytes, ours, measured)
    python scripts/silicon_allreduce.py --set llmcompass --set vidur_dgx
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from costmodel.system.nccl_check import decompose, points, summarize  # noqa: E402

SETS = ("vidur_dgx", "vidur_pairwise", "llmcompass")


def _table(head: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    w = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.rjust(n) for x, n in zip(r, w)) for r in [head] + rows)


def _us(s: float) -> str:
    return f"{s * 1e6:,.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    ap.add_argument("--every", action="store_true", help="print every point too")
    ap.add_argument("--set", action="append", choices=SETS, help="only these sets (repeatable)")
    args = ap.parse_args(argv)
    pts = [p for p in points() if not args.set or p.set in args.set]
    sums = summarize(pts)
    rows = [[s.set, f"{s.gpus}/{s.per_node}", str(s.n), f"{100 * s.mape:.1f}%", f"{100 * s.max_error:.0f}%",
             str(s.over_15)] for s in sums]
    print(_table(["set", "gpus/node", "points", "MAPE", "max error", "> 15% off"], rows, args.markdown))
    print()
    rows = [[s.set, f"{s.gpus}/{s.per_node}", label, str(n), _us(o), _us(m), f"{100 * e:.1f}%"]
            for s in sums for label, n, o, m, e in s.bands]
    print(_table(["set", "gpus/node", "band", "points", "ours us", "measured us", "MAPE"], rows, args.markdown))
    print()
    rows = [[ln.set, f"{ln.gpus}/{ln.per_node}", ln.band, f"{ln.measured_intercept_us:.1f}",
             f"{ln.ours_intercept_us:.1f}", f"{ln.measured_busbw_gbps:.1f}", f"{ln.ours_busbw_gbps:.1f}"]
            for ln in decompose(pts)]
    print(_table(["set", "gpus/node", "band", "measured us at 0 B", "ours us at 0 B", "measured bus GB/s",
                  "ours bus GB/s"], rows, args.markdown))
    if args.every:
        print()
        rows = [[p.set, f"{p.gpus}/{p.per_node}", str(p.bytes), f"{p.algorithm} {p.protocol}", _us(p.ours_s),
                 _us(p.measured_s), f"{100 * p.error:+.1f}%"] for p in pts]
        print(_table(["set", "gpus/node", "bytes", "NCCL's choice", "ours us", "measured us", "error"], rows,
                     args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
