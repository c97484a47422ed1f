"""SCALE-Sim side of scripts/compare_scalesim.py: runs in a Python that has scalesim (3.0.0), never ours.

Reads one JSON request on stdin::

    {"sram_kib": 65536,
     "shapes": [{"id": "...", "rows": 32, "cols": 32,
                 "topology": "conv", "csv": [IFMAP H, IFMAP W, filter H, filter W, channels, filters, stride]}
                | {"id": "...", "rows": 32, "cols": 32, "topology": "gemm", "csv": [M, N, K]}]}

and prints one JSON object per line per shape, in request order::

    {"id": "...", "total_cycles": int, "stall_cycles": int, "total_cycles_incl_prefetch": int}

Each shape is its own SCALE-Sim run (``scalesim.scale_sim.scalesim``, the class ``python -m
scalesim.scale`` drives) in a temporary folder: a config with the shape's ArrayHeight = rows and
ArrayWidth = cols, Dataflow = ws, every SRAM ``sram_kib`` KiB and InterfaceBandwidth = CALC (SCALE-Sim
sizes the DRAM bandwidth itself for stall-free execution); a one-row topology CSV (convolution
columns: layer name, IFMAP height, IFMAP width, filter height, filter width, channels, number of
filters, stride; with ``gemm`` the M, N, K columns read with ``input_type_gemm``); a layout CSV
(required by the loader; unused, custom layouts are off). The three figures are the row's columns
"Total Cycles", "Stall Cycles" and "Total Cycles (incl. prefetch)" of SCALE-Sim's
COMPUTE_REPORT.csv. Traces are not written. SCALE-Sim's own prints go to stderr.
"""

import contextlib
import csv
import json
import sys
import tempfile
from pathlib import Path

CONFIG = """\
[general]
run_name = pin

[architecture_presets]
ArrayHeight = {rows}
ArrayWidth = {cols}
IfmapSramSzkB = {sram}
FilterSramSzkB = {sram}
OfmapSramSzkB = {sram}
IfmapOffset = 0
FilterOffset = 10000000
OfmapOffset = 20000000
Dataflow = ws
Bandwidth = 10
ReadRequestBuffer = 32
WriteRequestBuffer = 32

[layout]
IfmapCustomLayout = False
IfmapSRAMBankBandwidth = 10
IfmapSRAMBankNum = 10
IfmapSRAMBankPort = 2
FilterCustomLayout = False
FilterSRAMBankBandwidth = 10
FilterSRAMBankNum = 10
FilterSRAMBankPort = 2

[sparsity]
SparsitySupport = false
SparseRep = ellpack_block
OptimizedMapping = false
BlockSize = 8
RandomNumberGeneratorSeed = 40

[run_presets]
InterfaceBandwidth = CALC
UseRamulatorTrace = False
"""
CONV_HEADER = "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,"
GEMM_HEADER = "Layer,M,N,K,"
LAYOUT_COLUMNS = 20   # the layout loader's integer columns after the layer name


def run_one(shape: dict, sram_kib: int, td: Path) -> dict:
    from scalesim.scale_sim import scalesim

    (td / "scale.cfg").write_text(CONFIG.format(rows=shape["rows"], cols=shape["cols"], sram=sram_kib))
    gemm = shape["topology"] == "gemm"
    row = "tile," + ",".join(str(int(x)) for x in shape["csv"]) + ","
    (td / "topology.csv").write_text((GEMM_HEADER if gemm else CONV_HEADER) + "\n" + row + "\n")
    (td / "layout.csv").write_text("Layer name," + ",".join(f"c{i}" for i in range(LAYOUT_COLUMNS)) + ",\n"
                                   + "tile," + ",".join(["1"] * LAYOUT_COLUMNS) + ",\n")
    sim = scalesim(save_disk_space=True, verbose=False, config=str(td / "scale.cfg"),
                   topology=str(td / "topology.csv"), layout=str(td / "layout.csv"), input_type_gemm=gemm)
    sim.run_scale(top_path=str(td / "out"))
    with open(td / "out" / "pin" / "COMPUTE_REPORT.csv", newline="") as f:
        rows = [{k.strip(): v.strip() for k, v in r.items() if k} for r in csv.DictReader(f)]
    (rep,) = rows
    return {"id": shape["id"], "total_cycles": int(rep["Total Cycles"]), "stall_cycles": int(rep["Stall Cycles"]),
            "total_cycles_incl_prefetch": int(rep["Total Cycles (incl. prefetch)"])}


def main():
    req = json.load(sys.stdin)
    out = sys.stdout
    for shape in req["shapes"]:
        with tempfile.TemporaryDirectory(prefix="scalesim_") as td, contextlib.redirect_stdout(sys.stderr):
            res = run_one(shape, int(req.get("sram_kib", 65536)), Path(td))
        print(json.dumps(res), file=out, flush=True)


if __name__ == "__main__":
    main()
