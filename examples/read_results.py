"""Run a tiny loop-nest campaign (SALSA and random search on the Eyeriss-like accelerator, every
layer of DeepBench's OCR network, minimising energy), then read its results as pandas DataFrames:
the stored rows and the per-layer table, pivoted to energy (pJ) per layer and mapper.

    python examples/read_results.py [OUT_DIR]     # default: a new temporary directory

It prints the result directory it writes.
"""

import sys
import tempfile
from pathlib import Path

from sweep import api

campaign = {
    "name": "tiny_compare",
    "networks": ["deepbench_ocr"],
    "objectives": ["energy"],
    "architectures": {"kind": "loopnest", "presets": ["eyeriss_like"]},
    "mappers": [{"name": "salsa", "params": {"chains": 1, "iterations": 200}},
                {"name": "random", "params": {"max_samples": 200}}],
}
out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="read_results_")
api.run_campaign(campaign, output=out, executor="local")
print(f"results: {Path(out).resolve()}")

results = api.load_results(out)
print(f"{results.manifest['name']}: {len(results.rows)} rows, {len(results.layers)} (layer, mapper) results")
energy = results.layers.pivot_table(index="layer", columns="label", values="energy_pj", sort=False)
print(energy.to_string(float_format="{:.7g}".format))
