"""Our ``a100`` preset against LLMCompass's A100 measurements (sweep/commands/silicon.py): a table per
series (measured, ours, ratio, what binds ours), the MAPE of each, and the GPT-3 block totals.

    python scripts/silicon_a100.py                    # SALSA, objective latency; about 3 s
    python scripts/silicon_a100.py --mapper loma --param lpf_limit=6   # another loop-nest mapper
    python scripts/silicon_a100.py --markdown > t.md  # the tables of docs/silicon.md
    python scripts/silicon_a100.py --launch-us 0      # the chip alone: no fixed cost per launch

The measurements (tests/data/llmcompass_a100/, their source in its SOURCE.md) are wall times of
PyTorch calls on an A100 80GB SXM; nothing is fitted to them (costmodel/presets/a100.toml).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sweep.commands.silicon import compare_a100, series_summary  # noqa: E402

DATA = ROOT / "tests" / "data" / "llmcompass_a100"


def _ms(s: float) -> str:
    return f"{s * 1e3:.4f}" if s < 1e-3 else f"{s * 1e3:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mapper", default="salsa", help="loop-nest mapper for the matmuls (default salsa)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="mapper parameter (repeatable), e.g. --param lpf_limit=6 for loma")
    ap.add_argument("--launch-us", type=float, default=None,
                    help="fixed cost per kernel launch, us (default: the preset's launch_overhead_us, 21)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    a = ap.parse_args(argv)
    arch = "a100"
    if a.launch_us is not None:
        from dataclasses import replace
        from costmodel.loopnest.arch import load_accelerator
        arch = replace(load_accelerator("a100"), launch_overhead_us=a.launch_us)
    t0 = time.perf_counter()
    params = {}
    for kv in a.param:
        k, _, v = kv.partition("=")
        params[k] = int(v) if v.lstrip("-").isdigit() else v
    try:
        rows = compare_a100(DATA, arch=arch, mapper=a.mapper, params=params)
    except ValueError as e:   # a bad mapper or parameter (CampaignError is a ValueError): named, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    wall = time.perf_counter() - t0
    sep = " | " if a.markdown else "  "
    for s in dict.fromkeys(r["series"] for r in rows):
        print(f"\n{'### ' if a.markdown else ''}{s}\n")
        head = ["point", "measured ms", "ours ms", "ours / measured", "binds ours", "utilisation"]
        print(("| " if a.markdown else "") + sep.join(head) + (" |" if a.markdown else ""))
        if a.markdown:
            print("|" + "|".join(["---"] + ["---:"] * 3 + ["---", "---:"]) + "|")
        for r in (r for r in rows if r["series"] == s):
            u = "" if r["utilization"] != r["utilization"] else f"{r['utilization']:.3f}"
            cells = [r["label"], _ms(r["measured_s"]), _ms(r["ours_s"]), f"{r['ratio']:.3f}", r["bound"], u]
            print(("| " if a.markdown else "") + sep.join(cells) + (" |" if a.markdown else ""))
    print(f"\n{'### ' if a.markdown else ''}summary ({a.mapper}, {wall:.1f} s)\n")
    head = ["series", "points", "MAPE %", "max |error| %", "points > 15% off", "MAPE >= 0.25 ms %", "block: measured ms, ours ms, error %"]
    print(("| " if a.markdown else "") + sep.join(head) + (" |" if a.markdown else ""))
    if a.markdown:
        print("|" + "|".join(["---"] + ["---:"] * 6) + "|")
    for s in series_summary(rows):
        block = (f"{s['block_measured_s'] * 1e3:.3f}, {s['block_ours_s'] * 1e3:.3f}, {s['block_error']:+.1f}"
                 if "block_error" in s else "")
        cells = [s["series"], str(s["points"]), f"{s['mape']:.1f}", f"{s['max_error']:.1f}", str(s["over_15"]),
                 f"{s['mape_ge_0_25ms']:.1f}" if "mape_ge_0_25ms" in s else "", block]
        print(("| " if a.markdown else "") + sep.join(cells) + (" |" if a.markdown else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
