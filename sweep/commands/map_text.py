"""What `sweep map --network` and `sweep eval` print for people (`sweep.cli`): the per-layer table
and totals of a mapped network (energy in pJ-scaled units, latency in cycles, EDP in pJ x cycles),
a systolic hardware point and DeepOpt's fixed-scheduling PMs in words, and the accesses and energy
per operand and memory level of one evaluated mapping with its latency split.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from sweep.commands import text
from sweep.common import fmt
from sweep.kinds.registry import kind_named

__all__ = ["fs_text", "point_text", "print_cost_report", "print_network"]


def point_text(p: dict) -> str:
    """A systolic hardware point in words (``point`` of `sweep.commands.map_eval.map_network`'s result)."""
    return (f"point {p['index']} (J x K = {p['J']} x {p['K']}, fSRAM {p['fsram_kib']}, iSRAM {p['isram_kib']}, "
            f"pSRAM {p['psram_kib']} KiB, {p['area_mm2']:.3f} mm^2)")


def fs_text(fig: dict) -> str:
    """The fixed-scheduling (FS) PMs of a DeepOpt result, one per branch (``fs_<branch>`` keys)."""
    return "FS: " + ", ".join(f"{k[3:]} {fmt.sig(v)}" for k, v in fig.items() if k.startswith("fs_"))


def print_network(res: dict, arch: str, mapper: str, wide: Console) -> None:
    """The per-layer table and the totals of `sweep.commands.map_eval.map_network`'s result ``res``,
    printed on ``wide``; on a systolic hardware point also each layer's LOS branch, the network PM
    and the FS PMs."""
    t = Table(title=f"{res['network']} on {arch}: {mapper}, objective {res['objective']}")
    searched = any(r.get("spatial_candidates", 1) > 1 for r in res["layers"])
    branches = "point" in res  # DeepOpt: the schedule (branch) of each layer
    cols = ("layer", "repeats") + (("LOS branch",) if branches else ()) + \
        ("energy", "latency", "EDP pJ*cycles", "evaluations", "wall s") + (("spatial unrolling",) if searched else ())
    for c in cols:
        t.add_column(c, justify="left" if c in ("layer", "LOS branch", "spatial unrolling") else "right")
    if any(r.get("merged") for r in res["layers"]):
        t.caption = "a layer's repeats count every layer of its shape, mapped once: (+ names) lists the others"
        t.caption_justify = "left"
    for r in res["layers"]:
        name = r["layer"] + (f" (+ {', '.join(r['merged'])})" if r.get("merged") else "")
        t.add_row(name, f"{r['repeat']:,}", *((r["branch"],) if branches else ()),
                  fmt.energy(r["energy_pj"]), fmt.cycles(r["latency_cycles"]),
                  fmt.edp(r["edp"], unit=False), f"{r['evaluations']:,}", text.num(r["wall_s"], ".3f"),
                  *((text.spatial_text(r.get("spatial")),) if searched else ()))
    tot = res["total"]
    e_mm, l_mm = tot.get("matmul_energy_pj", tot["energy_pj"]), tot.get("matmul_latency_cycles", tot["latency_cycles"])
    t.add_row("total (x repeats)", f"{tot['executed_layers']:,}", *(("",) if branches else ()),
              fmt.energy(e_mm), fmt.cycles(l_mm), fmt.edp(None if e_mm is None or l_mm is None else e_mm * l_mm, unit=False),
              f"{tot['evaluations']:,}", f"{tot['wall_s']:.3f}", style="bold")
    wide.print(t)
    wide.print(f"network {res['network']}: {len(res['layers'])} {'' if branches else 'unique '}layer(s), "
               f"{tot['executed_layers']} executed{', vector operations included' if 'vector_energy_pj' in tot else ''}; "
               f"energy {fmt.energy(tot['energy_pj'])}, latency "
               f"{fmt.cycles(tot['latency_cycles'])} (layers one after another"
               f"{', kernel launches included' if tot.get('launch_cycles') else ''}), EDP = total energy x total "
               f"latency {fmt.edp(tot['edp'])}", highlight=False, markup=False)
    if branches:
        wide.print(f"{point_text(res['point'])}: network PM {res['objective']} ({res['network_pm']} over the layers) "
                   f"{fmt.sig(tot['pm_value'])}; {fs_text(tot)}", highlight=False, markup=False)
    if "vector" in res or "llm" in res:
        from sweep.commands.llm_step import print_fusion_choice, print_step, print_system
        print_step(res, wide)
        print_fusion_choice(res, wide)
        print_system(res, wide)
    if not kind_named(res["arch_kind"]).energy_model:
        wide.print("multi-NPU archs have no energy model: energy and EDP are n/a (NaN); "
                   f"{tot.get('transferred_bytes', 0):,} bytes transferred in total", highlight=False)


def print_cost_report(rep: dict, console: Console) -> None:
    """Per operand and memory level accesses and energy, then the latency split."""
    if not rep.get("valid", True):
        console.print(f"invalid mapping: {rep.get('reason')}", style="red", markup=False)
        return
    b = rep.get("breakdown", {})
    t = Table(title="Accesses and energy per operand and memory level")
    for c in ("operand", "memory", "reads", "writes", "fills", "psum read-backs", "tile bits",
              "instances", "energy"):
        t.add_column(c, justify="left" if c in ("operand", "memory") else "right")
    for op, levels in b.get("operands", {}).items():
        for lv in levels:
            t.add_row(op, lv["memory"], f"{lv['reads']:,}", f"{lv['writes']:,}", f"{lv['fills']:,}",
                      f"{lv['readbacks']:,}", f"{lv['tile_bits']:,}", f"{lv['instances']:,}",
                      fmt.energy(lv['energy_pj']))
    t.add_row("MAC", "", f"{b.get('macs', 0):,}", "", "", "", "", "", fmt.energy(b.get('mac_energy_pj', 0)))
    console.print(t)
    stalls = {k: v for k, v in b.get("stall_cycles", {}).items() if v}
    console.print(f"energy {fmt.energy(rep['energy_pj'])}; latency {fmt.cycles(rep['latency_cycles'])} = "
                  f"compute {b.get('compute_cycles', 0):,} + stall (largest of "
                  f"{', '.join(f'{k} {v:,.0f}' for k, v in stalls.items()) or 'none'}); "
                  f"utilisation {b.get('utilization', 1):.1%}; EDP {fmt.edp(rep['edp'])}", markup=False)
