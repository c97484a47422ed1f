"""A small architecture search from a dict: 4 Eyeriss-like designs (2 array heights x 2 global
buffer sizes), every layer of DeepBench's OCR network mapped by SALSA on each, then the designs on
the Pareto front of area (mm^2) and EDP (pJ x cycles).

    python examples/arch_search.py [OUT_DIR]      # default: a new temporary directory

It prints the result directory it writes (then: sweep report OUT_DIR --plots OUT_DIR/plots).
"""

import sys
import tempfile
from pathlib import Path

from sweep import api

campaign = {
    "name": "tiny_search",
    "networks": ["deepbench_ocr"],
    "objectives": ["edp"],
    "architectures": {"kind": "loopnest", "template": "eyeriss_like",
                      "grid": {"array.D1": [7, 14], "memory.sram_1M.size_kib": [128, 1024]}},
    "mappers": [{"name": "salsa", "params": {"chains": 1, "iterations": 100, "descent": False}}],
}
out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="arch_search_")
run = api.run_campaign(campaign, output=out, executor="local")
print(f"results: {Path(run.output).resolve()}")
totals = api.load_results(run.output).totals               # one row per (design, network)
front = api.pareto_front(totals, "area_mm2", "edp")
print(f"{len(totals)} designs, {len(front)} on the area-EDP front:")
print(front[["design_id", "array.D1", "memory.sram_1M.size_kib", "area_mm2", "edp"]].to_string(index=False))
