"""Serving on many chips side by side with GenZ and llm-analysis (`sweep.commands.peers_llm`).

Usage: python scripts/peers_llm.py [--peer genz|llm-analysis ...] [--model Llama-3-70B ...] [--mapper salsa]
                                   [--data tests/data/peers_llm] [--markdown] [--short]

Each pinned peer case (Llama-3-70B: prefill of 2,048 tokens at batch 1, decode at context 4,096 for
batch 32 and 1, TP 1/2/4/8, PP 2/4, TP x PP; Mixtral-8x7B: EP 2/4/8 and TP 2) mapped by us on the
``a100`` preset re-described with the peer's platform; prints the peer's figure, ours, the ratio,
memory per chip (weights and KV cache) and the conventions that differ. To rerun the peers themselves:
``scripts/peers/genz_driver.py`` and ``scripts/peers/llm_analysis_driver.py`` (each in its own venv).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from sweep.commands.peers_llm import CONVENTIONS, PLATFORMS, compare  # noqa: E402


def _ms(v) -> str:
    return "-" if v is None else f"{v * 1e3:,.2f}"


def _gb(v) -> str:
    return "-" if v is None else f"{v / 1e9:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", nargs="+", default=list(PLATFORMS), choices=list(PLATFORMS))
    ap.add_argument("--model", nargs="+", default=["Llama-3-70B", "Mixtral-8x7B"])
    ap.add_argument("--mapper", default="salsa")
    ap.add_argument("--data", default=str(ROOT / "tests" / "data" / "peers_llm"))
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables (docs/system.md)")
    ap.add_argument("--short", action="store_true", help="name the differing conventions (CONVENTIONS keys) only")
    a = ap.parse_args()
    for peer in a.peer:
        t0 = time.perf_counter()
        rows = compare(peer, a.data, a.mapper, tuple(a.model))
        sep = " | " if a.markdown else "  "
        head = ["model", "phase", "batch", "tp", "pp", "ep", f"{peer} ms", "ours ms", "ours/peer", "weights GB peer/ours",
                "KV GB peer/ours", "what differs"]
        print(f"\n{peer} ({time.perf_counter() - t0:.1f} s)")
        if a.markdown:
            print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for r in rows:
            peer_s = _ms(r["peer_s"]) + (" (refused)" if r["peer_refused"] else "")
            ours = _ms(r["ours_s"]) if r["status"] == "ok" else r["status"]
            ratio = f"{r['ratio']:.2f}" if r["ratio"] else "-"
            conv = r["convention"] or "-"
            if a.short:
                conv = "; ".join(k for k, v in CONVENTIONS[peer].items() if v in conv) or "-"
            cells = [r["model"], r["phase"], str(r["batch"]), str(r["tp"]), str(r["pp"]), str(r["ep"]), peer_s, ours,
                     ratio, f"{_gb(r['peer_weights_bytes'])} / {_gb(r['ours_weights_bytes'])}",
                     f"{_gb(r['peer_kv_bytes'])} / {_gb(r['ours_kv_bytes'])}", conv]
            print(("| " if a.markdown else "") + sep.join(cells) + (" |" if a.markdown else ""))


if __name__ == "__main__":
    main()
