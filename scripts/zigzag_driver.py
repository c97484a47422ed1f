"""ZigZag side of scripts/compare_zigzag.py: runs in a Python that has zigzag-dse (3.9.1), never ours.

Reads one JSON request on stdin::

    {"hardware": "...yaml", "mapping": "...yaml", "engine": "loma" | "salsa", "lpf_limit": 6,
     "opt": "energy", "dump": "/tmp/dir",
     "layers": [{"name", "K", "C", "OY", "OX", "FY", "FX", "B", "SY", "SX", "precision": {W, I, O, O_final}}]}

and prints one JSON object per line per layer: ZigZag's best mapping found by ``engine`` (energy,
latency_total0/1/2, ideal_temporal_cycle, stall_slack_comb, data_onloading_cycle,
data_offloading_cycle, spatial mapping, temporal mapping per operand and memory level, innermost
first, energy breakdown per operand and level). Only ZigZag's public API is used
(``zigzag.api.get_hardware_performance_zigzag``); each layer is its own run (a workload of one layer,
no padding: both tools count the padded input footprint).
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
    }]


def main():
    req = json.load(sys.stdin)
    logging.disable(logging.WARNING)
    from zigzag.api import get_hardware_performance_zigzag

    for layer in req["layers"]:
        _, _, cmes = get_hardware_performance_zigzag(
            _workload(layer), req["hardware"], req["mapping"], opt=req.get("opt", "energy"),
            temporal_mapping_search_engine=req.get("engine", "loma"), lpf_limit=req.get("lpf_limit", 6),
            dump_folder=f"{req.get('dump', '/tmp/zigzag_compare')}/{layer['name']}", loma_show_progress_bar=False)
        logging.disable(logging.WARNING)  # the API resets the logging config on each call
        cme = cmes[0][1][0][0]
        tm = cme.temporal_mapping.mapping_dic_origin
        out = {
            "layer": layer["name"], "engine": req.get("engine", "loma"),
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
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
