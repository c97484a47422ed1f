"""Why a dataflow wins: per-memory-level energy of the best design of each dataflow of an
architecture search with a ``dataflow`` axis (e.g. ``campaigns/dataflow_eyeriss.toml``).

Usage: python scripts/dataflow_breakdown.py results/dataflow_eyeriss [--campaign campaigns/dataflow_eyeriss.toml]
                                            [--networks resnet18 ...] [--json out.json] [--multicast-effect]

For each network, two comparisons:

* **best of each dataflow**: the design the report names as each dataflow's best (``sweep report
  DIR --json``: ``networks.<net>.dataflows.effects``, files in ``DIR/designs``);
* **equal hardware**: the best design overall with its dataflow swapped for each of the others
  (same array, same memories, same area: the Eyeriss paper's comparison at equal area, Sec. VI),
  each with its own multicast (the campaign's ``multicast`` of that dataflow, none if absent);
* with ``--multicast-effect``: each dataflow's best design mapped without and with the multicast
  the campaign declares for it (the multicast's effect on equal hardware).

Each network is mapped on each accelerator with the campaign's mapper and parameters
(`sweep.commands.map_eval.map_network`, the same call as the report's ``sweep map`` commands), every layer's
best mapping is costed by the reference model (`costmodel.loopnest.reference.evaluate`), and the
energy is summed (x repeats) per memory level and for the MACs. Printed: EDP, energy, latency,
spatial utilisation (MACs / (PEs x compute cycles)) and the per-level energies in uJ.
"""

from __future__ import annotations

import argparse
import json
import tomllib
from dataclasses import replace
from pathlib import Path

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.hint import SpatialHint
from costmodel.loopnest.mapping import Mapping, SpatialMapping
from costmodel.loopnest.reference import evaluate
from costmodel.zoo import load_network
from sweep.commands.map_eval import map_network


def breakdown(network, acc, mapper: str, objective: str, params: dict) -> dict:
    """Map ``network`` on ``acc``; totals and energy per memory level (pJ) over the layers x repeats."""
    res = map_network(network, acc, mapper, objective, 0, params)
    levels: dict[str, float] = {m.name: 0.0 for m in acc.memories}
    levels["MAC"] = 0.0
    macs = cycles = 0.0
    for (layer, rep), row in zip(network.unique(), res["layers"]):
        rep_ = evaluate(layer, acc, Mapping.from_dict(row["mapping"]))
        b = rep_.breakdown
        for op in ("W", "I", "O"):
            for lv in b["operands"][op]:
                levels[lv["memory"]] += rep * lv["energy_pj"]
        levels["MAC"] += rep * (b["mac_energy_pj"] + b.get("accumulator_energy_pj", 0.0))
        macs += rep * b["macs"]
        cycles += rep * b["compute_cycles"]
    t = res["total"]
    return {"energy_pj": t["energy_pj"], "latency_cycles": t["latency_cycles"], "edp": t["edp"],
            "utilization": macs / (cycles * acc.pe_count), "levels_pj": levels,
            "array": dict(acc.array)}


def _print(title: str, rows: dict) -> None:
    print(title)
    names = list(next(iter(rows.values()))["levels_pj"])
    print(f"  {'dataflow':10} {'array':8} {'EDP':>10} {'energy uJ':>10} {'Mcycles':>8} {'util':>6} "
          + " ".join(f"{n:>10}" for n in names))
    for df, r in rows.items():
        arr = "x".join(str(v) for v in r["array"].values())
        print(f"  {df:10} {arr:8} {r['edp']:10.4g} {r['energy_pj'] / 1e6:10.1f} {r['latency_cycles'] / 1e6:8.2f} "
              f"{r['utilization']:6.3f} " + " ".join(f"{r['levels_pj'][n] / 1e6:10.1f}" for n in names))


def _multicast(d: dict) -> tuple:
    """A dataflow table's ``multicast`` as the accelerator field ((operand, array dims), ...)."""
    return tuple((op, tuple(dims)) for op, dims in d.get("multicast", {}).items())


def _multicast_effect(net, best: dict, dataflows: dict, mapper: str, objective: str, params: dict) -> dict:
    """Per dataflow declaring a multicast: its best design mapped without and with it (EDP ratio
    printed; the per-level figures returned)."""
    out = {}
    for df, acc in best.items():
        mc = _multicast(dataflows.get(df, {}))
        if not mc:
            continue
        without = breakdown(net, replace(acc, multicast=()), mapper, objective, params)
        with_ = breakdown(net, replace(acc, multicast=mc), mapper, objective, params)
        out[df] = {"without": without, "with": with_}
        print(f"  {df}: multicast {dict(mc)}: EDP {without['edp']:.4g} -> {with_['edp']:.4g} "
              f"({with_['edp'] / without['edp'] - 1:+.2%})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--campaign", default="campaigns/dataflow_eyeriss.toml")
    ap.add_argument("--networks", nargs="*")
    ap.add_argument("--json", help="write every figure to this JSON file")
    ap.add_argument("--multicast-effect", action="store_true",
                    help="also map each dataflow's best design with its multicast toggled (the campaign's "
                         "[architectures.dataflows.<name>] multicast: added where the results lack it, "
                         "removed where they have it): the effect of the multicast on equal hardware")
    a = ap.parse_args()
    camp = tomllib.loads(Path(a.campaign).read_text())
    spec = camp["mappers"][0]
    mapper, params = spec["name"], dict(spec.get("params", {}))
    objective = camp.get("objectives", ["energy"])[0]
    dataflows = camp["architectures"]["dataflows"]
    from sweep.kinds import build_report
    rep = build_report(a.results)
    out = {}
    for net_name, net_rep in rep["networks"].items():
        if a.networks and net_name not in a.networks:
            continue
        net = load_network(net_name)
        effects = net_rep["dataflows"]["effects"]
        best = {e["dataflow"]: load_accelerator(Path(a.results) / "designs" / f"{e['best_design_id']}.toml")
                for e in effects}
        top = min(effects, key=lambda e: e["best_edp"])
        own = {df: breakdown(net, acc, mapper, objective, params) for df, acc in best.items()}
        _print(f"{net_name}: best design of each dataflow", own)
        base = best[top["dataflow"]]
        same = {}
        for df, d in dataflows.items():
            mc = _multicast(d)
            if "spatial_hint" in d:
                acc = replace(base, spatial=SpatialMapping({}), multicast=mc,
                              spatial_hint=SpatialHint.from_dict(d["spatial_hint"], base.array))
            else:
                acc = replace(base, spatial=SpatialMapping.from_dict(d["spatial"]), spatial_hint=None, multicast=mc)
            same[df] = breakdown(net, acc, mapper, objective, params)
        _print(f"{net_name}: equal hardware (design {top['best_design_id']}, best of {top['dataflow']}) "
               f"with each dataflow", same)
        out[net_name] = {"best_of_each": own, "equal_hardware": same, "equal_hardware_design": top["best_design_id"]}
        if a.multicast_effect:
            out[net_name]["multicast_effect"] = _multicast_effect(net, best, dataflows, mapper, objective, params)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
