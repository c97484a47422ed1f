"""ZigZag side of scripts/compare_zigzag.py: runs in a Python that has zigzag-dse (3.9.1), never ours.

Reads one JSON request on stdin::

    {"hardware": "...yaml", "mapping": "...yaml", "engine": "loma" | "salsa", "lpf_limit": 6,
     "opt": "energy", "dump": "/tmp/dir", "nb_spatial_mappings_generated": 3,
     "layers": [{"name", "K", "C", "OY", "OX", "FY", "FX", "B", "SY", "SX", "precision": {W, I, O, O_final}}]}

or, instead of ``layers``, ``"onnx": "/path/model.onnx"`` (ZigZag parses the file itself: Conv, Gemm
and MatMul nodes become layers with its ONNX precisions W 8, I 8, O 16, O_final 8 and the file's
padding; the other nodes are skipped). The mapping YAML may fix the spatial unrolling or leave
array dims to its ``spatial_mapping_hint`` (ZigZag then tries ``nb_spatial_mappings_generated``
unrollings per layer and keeps the best; ``spatial`` below is the one kept). It prints one JSON object per line per layer: ZigZag's best
mapping found by ``engine`` (energy, latency_total0/1/2, ideal_temporal_cycle, stall_slack_comb,
data_onloading_cycle, data_offloading_cycle, spatial mapping, temporal mapping per operand and
memory level, innermost first, energy breakdown per operand and level), ``layer`` = the ONNX node
name. Only ZigZag's public API is used (``zigzag.api.get_hardware_performance_zigzag``); with
``layers`` each layer is its own run (a workload of one layer, with the layer's ``padding``,
``pr_loop_dims`` and ``pr_loop_sizes`` where the request gives them, as ZigZag's ONNX parser
writes them), with ``onnx`` the whole file is one run.
"""

import json
import logging
import sys


def _workload(layer):
    p = layer["precision"]
    return [{
        "id": 0, "name": layer["name"], "operator_type": "Conv",
        "equation": "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
        "dimension_relations": [f"ix={layer.get('SX', 1)}*ox+1*fx", f"iy={layer.get('SY', 1)}*oy+1*fy"],
        "loop_dims": ["B", "K", "C", "OY", "OX", "FY", "FX"],
        "loop_sizes": [layer.get(d, 1) for d in ("B", "K", "C", "OY", "OX", "FY", "FX")],
        "operand_precision": {"W": p["W"], "I": p["I"], "O": p["O"], "O_final": p["O_final"]},
        **{k: layer[k] for k in ("pr_loop_dims", "pr_loop_sizes", "padding") if k in layer},
    }]


def _record(cme, name: str, engine: str) -> dict:
    """One layer's best CostModelEvaluation as a JSON-able dict."""
    tm = cme.temporal_mapping.mapping_dic_origin
    return {
        "layer": name, "engine": engine,
        "energy_pj": float(cme.energy_total), "mac_energy_pj": float(cme.mac_energy),
        "latency_cycles": float(cme.latency_total2),
        "latency_total0": float(cme.latency_total0), "latency_total1": float(cme.latency_total1),
        "ideal_cycle": float(cme.ideal_cycle), "ideal_temporal_cycle": float(cme.ideal_temporal_cycle),
        "stall_slack_comb": float(cme.stall_slack_comb),
        "data_onloading_cycle": float(cme.data_onloading_cycle),
        "data_offloading_cycle": float(cme.data_offloading_cycle),
        "spatial": {str(a): {str(d): float(f) for d, f in v.items()} for a, v in cme.layer.spatial_mapping.items()},
        "temporal": {str(op): [[[str(d), int(round(f))] for d, f in lv] for lv in levels] for op, levels in tm.items()},
        "energy_breakdown": {str(op): [float(x) for x in v] for op, v in cme.mem_energy_breakdown.items()},
    }


def _run(workload, req: dict, dump: str):
    from zigzag.api import get_hardware_performance_zigzag

    _, _, cmes = get_hardware_performance_zigzag(
        workload, req["hardware"], req["mapping"], opt=req.get("opt", "energy"),
        temporal_mapping_search_engine=req.get("engine", "loma"), lpf_limit=req.get("lpf_limit", 6),
        dump_folder=dump, loma_show_progress_bar=False,
        nb_spatial_mappings_generated=req.get("nb_spatial_mappings_generated", 3))
    logging.disable(logging.WARNING)  # the API resets the logging config on each call
    return cmes[0][1]  # [(best cme, (layer node, extra)) per layer]


def main():
    req = json.load(sys.stdin)
    logging.disable(logging.WARNING)
    engine, dump = req.get("engine", "loma"), req.get("dump", "/tmp/zigzag_compare")
    if req.get("onnx"):
        for cme, (node, _) in _run(req["onnx"], req, f"{dump}/onnx"):
            print(json.dumps(_record(cme, node.name, engine)), flush=True)
        return
    for layer in req["layers"]:
        cme = _run(_workload(layer), req, f"{dump}/{layer['name']}")[0][0]
        print(json.dumps(_record(cme, layer["name"], engine)), flush=True)


if __name__ == "__main__":
    main()
