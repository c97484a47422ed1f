"""`sweep report` of a multi-NPU (``kind = "npu"``) result directory: Flexer vs the best static
loop order.

The loop-nest report (`sweep.reports.loopnest`: per-layer and per-network tables against the
baseline mapper, and their plots), then, from the unit rows and the problems table:

* ``npu_layers``: per (network, layer, arch) the best schedule of the mapper (default ``flexer``)
  and of the baseline (default ``static``): latency (cycles), transferred bytes, the speed-up
  (baseline latency / mapper latency) and the data reduction (baseline bytes / mapper bytes) --
  Flexer's Fig. 9. Each mapper's best is by the campaign's metric (latency x bytes by default), as
  in the paper, so a layer's speed-up can be below 1 when the mapper trades latency for bytes.
* ``npu_networks``: per (network, arch) the same ratios over the whole network, latencies and
  bytes summed over its layers with their repeat counts (layers executed one after another), and
  the largest per-layer speed-up -- Fig. 8.
* plots: per-layer speed-up and data reduction of one network on every arch (Fig. 9), per-network
  bars (Fig. 8), the data moved by type of two layers (Fig. 10: IN, WT, final OT and partial-sum
  bytes per mapper, each bar labelled with the mean number of DRAM moves per tile -- IN and WT
  loads, OT write-backs including partial-sum spills; the two mappers' best tilings may differ --
  and, as the paper's "on-chip" bar, the bytes of flexer's tiling with an unlimited buffer), and a Gantt chart of one Flexer schedule (cores and the DRAM
  channel over time), rebuilt from the stored tiling and dataflow with `mappers.npu.flexer`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sweep.common import fmt
from sweep.common.fmt import print_wide
from sweep.reports.summary import print_plots, print_summary
from sweep.reports.loopnest import assemble, finished, print_layer_report, read
from sweep.reports.plots import category_ticks, figure, rotate_xticklabels, save

__all__ = ["PAPER_FIGURES", "build", "npu_report", "paper_comparison", "print_npu_report", "show", "write_npu_plots"]

#: The figures Flexer's paper states for Figs. 8-9 (Min, Kwon, Egger, "Flexer: Out-of-Order
#: Scheduling for Multi-NPUs", section 5; the figures' bars themselves are not in the text): the
#: largest end-to-end (whole network) speed-up and data reduction over the best static loop order
#: on arch1..arch8 (Fig. 8), and the largest per-layer ones, VGG16 on arch5 (Fig. 9(a)).
PAPER_FIGURES = {"network_speedup": 1.67, "network_data_reduction": 1.26,
                 "layer_speedup_vgg16_arch5": 2.17, "layer_data_reduction_vgg16_arch5": 1.53}


def build(directory: Path, manifest: dict, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of an NPU result directory as JSON-able data: the loop-nest report, then
    `npu_report` (module doc); with ``plots_dir``, also the plots of both.

    Raises:
        StoreError: unreadable, or no result row stored yet.
    """
    rows, problems = read(directory)
    rep = assemble(directory, manifest, rows, problems, plots_dir)
    cfg = manifest.get("report") or {}
    npu, frame = npu_report(rows, problems, cfg.get("mapper", "flexer"), cfg.get("baseline", "static"))
    rep.update(npu)
    if plots_dir is not None:
        nets = {n["name"]: n["layers"] for n in manifest["config"].get("networks", [])}
        rep["plots"] += write_npu_plots(rep, frame, plots_dir, cfg.get("network"), nets)
    return rep


def show(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build`) as Rich tables."""
    print_summary(rep, console)
    print_layer_report(rep, console)
    print_npu_report(rep, console)
    print_plots(rep, console)


def _best(rows: pd.DataFrame, problems: pd.DataFrame, mapper: str) -> pd.DataFrame:
    ok = rows[(rows["status"] == "ok") & (rows["mapper"] == mapper)].copy()
    ok["value"] = ok["value"].astype(float)
    # the mapper's reduce (`mappers.npu.tiled.TiledNPUMapper.reduce`): under the latency metric equal
    # latencies by fewer transferred bytes, then the first unit
    ok["_tie"] = np.where(ok["objective"] == "latency", ok["transferred_bytes"].astype(float), 0.0) \
        if "objective" in ok else 0.0
    ok = ok[np.isfinite(ok["value"])].sort_values(["problem_id", "value", "_tie", "unit_index"], kind="stable")
    best = ok.groupby("problem_id", sort=False).head(1).set_index("problem_id")
    cols = ["value", "latency_cycles", "transferred_bytes", "extra", "params"]
    probs = problems.drop(columns=["task_id", "mapper", "arch", "objective", "seed"], errors="ignore")
    return probs.join(best[cols + ["arch"]], on="problem_id", how="inner")


def npu_report(rows: pd.DataFrame, problems: pd.DataFrame, mapper: str = "flexer",
               baseline: str = "static") -> tuple[dict[str, Any], pd.DataFrame | None]:
    """Per-layer and per-network speed-up and data reduction of ``mapper`` over ``baseline``
    (module doc), and the per-layer frame the plots are drawn from (with both mappers' stored
    ``extra`` and ``params``); empty tables and None when either mapper has no finished row."""
    if not finished(rows, problems):
        return {"npu_mapper": mapper, "npu_baseline": baseline, "npu_layers": [], "npu_networks": []}, None
    f, s = _best(rows, problems, mapper), _best(rows, problems, baseline)
    if f.empty or s.empty:
        return {"npu_mapper": mapper, "npu_baseline": baseline, "npu_layers": [], "npu_networks": []}, None
    key = ["network", "layer_index", "layer", "arch", "repeat"]
    cols = ["value", "latency_cycles", "transferred_bytes", "extra", "params"]
    m = f[key + cols].merge(s[key + cols], on=key, suffixes=("", "_base"))
    m = m.sort_values(["network", "arch", "layer_index"], kind="stable")
    m["speedup"] = m["latency_cycles_base"] / m["latency_cycles"]
    m["data_reduction"] = m["transferred_bytes_base"] / m["transferred_bytes"]
    m["metric_gain"] = m["value_base"] / m["value"]
    layers = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
              for r in m.drop(columns=["extra", "extra_base", "params", "params_base"]).to_dict("records")]
    nets = []
    for (net, arch), g in m.groupby(["network", "arch"], sort=False):
        w = g["repeat"].astype(float)
        lat_f, lat_s = float((w * g["latency_cycles"]).sum()), float((w * g["latency_cycles_base"]).sum())
        b_f, b_s = float((w * g["transferred_bytes"]).sum()), float((w * g["transferred_bytes_base"]).sum())
        nets.append({"network": net, "arch": arch, "layers": len(g), "latency_cycles": lat_f,
                     "latency_cycles_base": lat_s, "bytes": b_f, "bytes_base": b_s, "speedup": lat_s / lat_f,
                     "data_reduction": b_s / b_f, "metric_gain": (lat_s * b_s) / (lat_f * b_f),
                     "max_layer_speedup": float(g["speedup"].max()),
                     "max_layer_data_reduction": float(g["data_reduction"].max()),
                     "layers_faster": int((g["speedup"] > 1.0).sum()),
                     "layers_slower": int((g["speedup"] < 1.0).sum())})
    out = {"npu_mapper": mapper, "npu_baseline": baseline, "npu_layers": layers, "npu_networks": nets}
    out["npu_paper"] = paper_comparison(out)
    return out, m


def paper_comparison(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """Ours against `PAPER_FIGURES`: per figure the paper's value, ours (the same maximum over the
    report's rows; None when the rows needed are missing) and where ours is reached (network, arch
    and, per layer, the layer)."""
    nets, layers = rep.get("npu_networks", []), rep.get("npu_layers", [])
    v5 = [r for r in layers if r["network"] == "vgg16" and r["arch"] == "arch5"]
    rows = []
    for key, src, col in (("network_speedup", nets, "speedup"), ("network_data_reduction", nets, "data_reduction"),
                          ("layer_speedup_vgg16_arch5", v5, "speedup"),
                          ("layer_data_reduction_vgg16_arch5", v5, "data_reduction")):
        best = max(src, key=lambda r: r[col]) if src else None
        rows.append({"figure": key, "paper": PAPER_FIGURES[key], "ours": None if best is None else float(best[col]),
                     "where": None if best is None else
                     " ".join(str(best[k]) for k in ("network", "arch", "layer") if k in best)})
    return rows


def print_npu_report(rep: dict[str, Any], console) -> None:
    """Rich tables of `npu_report` (per network; the per-layer table of each network on one arch)."""
    from rich.table import Table

    f, b = rep.get("npu_mapper"), rep.get("npu_baseline")
    if not rep.get("npu_networks"):
        if rep.get("failures") and f:
            console.print(f"no {f} vs {b} comparison: a layer needs a finished row of both (the failures are "
                          "listed above)", style="yellow", soft_wrap=True, highlight=False, markup=False)
        return
    t = Table(title=f"{f} over the best {b} schedule per network (Flexer Fig. 8): latency and bytes summed "
                    f"over layers x repeats")
    for c in ("network", "arch", "layers", f"{f} latency", f"{b} latency", "speed-up", f"{f} MB", f"{b} MB",
              "data reduction", "latency x bytes gain", "max layer speed-up", "layers faster/slower"):
        t.add_column(c, justify="left" if c in ("network", "arch") else "right", no_wrap=True)
    for r in rep["npu_networks"]:
        t.add_row(r["network"], r["arch"], str(r["layers"]), fmt.cycles(r["latency_cycles"]),
                  fmt.cycles(r["latency_cycles_base"]), f"{r['speedup']:.3f}x", fmt.sig(r["bytes"] / 1e6),
                  fmt.sig(r["bytes_base"] / 1e6), f"{r['data_reduction']:.3f}x", f"{r['metric_gain']:.3f}x",
                  f"{r['max_layer_speedup']:.3f}x", f"{r['layers_faster']}/{r['layers_slower']}")
    print_wide(console, t)
    t = Table(title=f"{f} against the figures Flexer's paper states (Figs. 8-9, section 5)")
    for c in ("largest", "paper", "ours", "where"):
        t.add_column(c, justify="left" if c in ("largest", "where") else "right")
    for r in rep.get("npu_paper", []):
        t.add_row(r["figure"].replace("_", " "), f"{r['paper']:.2f}x",
                  "-" if r["ours"] is None else f"{r['ours']:.2f}x", r["where"] or "-")
    console.print(t)


def _reload_hist(extra_json: str) -> dict[str, dict[int, int]]:
    rel = json.loads(extra_json).get("reloads", {})
    return {typ: {int(k): int(v) for k, v in h.items()} for typ, h in rel.items()}


def write_npu_plots(rep: dict[str, Any], m: pd.DataFrame | None, plots_dir: str | Path,
                    network: str | None = None, layers: dict[str, list[dict]] | None = None) -> list[str]:
    """Figs. 8-10 and a Gantt chart (module doc) into ``plots_dir``; returns the paths. ``m``: the
    per-layer frame of `npu_report`. ``layers``: network name -> its layers as `Layer` field dicts
    (the manifest's resolved configuration), needed to rebuild the Gantt schedule (skipped without
    it, or when the arch is not a preset).

    Raises:
        RuntimeError: the rebuilt schedule does not have the stored latency (rows of another
            version of `mappers.npu.flexer`).
    """
    if m is None or m.empty:
        return []
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(parents=True, exist_ok=True)
    network = network if network in set(m["network"]) else m["network"].iloc[0]
    g = m[m["network"] == network]
    written = [_layers_plot(rep, g, network, plots_dir / f"npu_layers_{network.replace('/', '_')}.png"),
               _networks_plot(rep, plots_dir / "npu_networks.png")]
    # Fig. 10: the two layers of `network` with the largest speed-up on the arch of its largest one
    arch0 = g.loc[g["speedup"].idxmax(), "arch"]
    two = g[g["arch"] == arch0].nlargest(2, "speedup")
    written.append(_reloads_plot(rep, two, network, arch0, layers, plots_dir / "npu_reloads.png"))
    if not two.empty:
        r = two.iloc[0]
        layer = _layer(layers, network, r["layer"])
        if layer is not None and _is_preset(arch0):
            written.append(_gantt(r, layer, network, arch0, plots_dir / "npu_gantt.png"))
    return written


def _layers_plot(rep: dict[str, Any], g: pd.DataFrame, network: str, path: Path) -> str:
    """Fig. 9: per unique layer of ``network``, speed-up and data reduction on every arch."""
    fig, (ax1, ax2) = figure(2, 1, figsize=(12, 6.5), sharex=True)
    idx = sorted(g["layer_index"].unique())
    names = g.groupby("layer_index")["layer"].first().reindex(idx)
    for arch, ga in g.groupby("arch", sort=True):
        x = [idx.index(li) for li in ga["layer_index"]]
        ax1.plot(x, ga["speedup"], marker="o", ms=3, label=arch)
        ax2.plot(x, ga["data_reduction"], marker="o", ms=3, label=arch)
    for ax, lab in ((ax1, "speed-up"), (ax2, "data reduction")):
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_ylabel(f"{lab} (x)")
    ax1.legend(fontsize=7, ncol=4)
    category_ticks(ax2, list(names))
    ax2.set_xlabel(f"unique layer of {network}")
    return save(fig, path, f"{network}: per-layer speed-up and data reduction of {rep['npu_mapper']} over the best "
                           f"{rep['npu_baseline']} schedule (Fig. 9)")


def _networks_plot(rep: dict[str, Any], path: Path) -> str:
    """Fig. 8: per network and arch, the speed-up and data reduction over the whole network."""
    nets = pd.DataFrame(rep["npu_networks"])
    fig, (ax1, ax2) = figure(1, 2, figsize=(14, 5))
    nets.pivot_table(index="network", columns="arch", values="speedup").plot.bar(ax=ax1, legend=False)
    nets.pivot_table(index="network", columns="arch", values="data_reduction").plot.bar(ax=ax2, legend=False)
    for ax, lab in ((ax1, "network speed-up"), (ax2, "network data reduction")):
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_ylabel(f"{lab} (x)")
        rotate_xticklabels(ax, 30 if nets["network"].nunique() > 3 else 0)
    h, l_ = ax1.get_legend_handles_labels()
    ax2.legend(h, l_, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, title="arch")
    return save(fig, path, f"Per network: {rep['npu_mapper']} over the best {rep['npu_baseline']} schedule (Fig. 8)")


def _byte_unit(max_bytes: float) -> tuple[float, str]:
    """The scale and name of the unit that shows ``max_bytes`` as a number of at least 1."""
    return next(((s, u) for s, u in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")) if max_bytes >= s), (1.0, "bytes"))


def _reloads_plot(rep: dict[str, Any], two: pd.DataFrame, network: str, arch0: str,
                  layers: dict[str, list[dict]] | None, path: Path) -> str:
    """Fig. 10: bytes moved by type of the layers ``two``, per mapper (and with an unlimited buffer)."""
    f, b = rep["npu_mapper"], rep["npu_baseline"]
    fig, axes = figure(1, len(two), figsize=(6.5 * len(two), 4.2), squeeze=False)
    types = ("IN", "WT", "OT", "PS")
    for ax, (_, r) in zip(axes[0], two.iterrows()):
        ex_f = json.loads(r["extra"])
        bars_of = [(f"{who} {json.loads(r[col])['tiling']}", json.loads(r[col])["bytes_by_type"], _reload_hist(r[col]))
                   for who, col in ((f, "extra"), (b, "extra_base"))]
        layer = _layer(layers, network, r["layer"])
        if layer is not None and _is_preset(arch0):  # the paper's "on-chip" bar: every tile moved once
            bars_of.append((f"unlimited buffer {ex_f['tiling']}", _onchip_bytes(layer, arch0, ex_f["tiling"]), {}))
        scale, unit = _byte_unit(max(max(by.values(), default=0) for _, by, _ in bars_of))
        w = 0.8 / len(bars_of)
        for k, (label, by, h) in enumerate(bars_of):
            bars = ax.bar(np.arange(4) + (k - (len(bars_of) - 1) / 2) * w, [by.get(t, 0) / scale for t in types],
                          width=w, label=label)
            for bar, t in zip(bars, types):  # mean DRAM moves per tile of that type
                ht = h.get(t, {})
                if ht and t != "PS":
                    mean = sum(m * c for m, c in ht.items()) / sum(ht.values())
                    ax.annotate(f"{mean:.2f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                ha="center", va="bottom", fontsize=6)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.5)  # headroom: the legend above the bars, not over them
        ax.set_xticks(np.arange(4), ["IN", "WT", "OT (final)", "PS (spill+reload)"], fontsize=8)
        ax.set_ylabel(f"{unit} moved")
        ax.set_title(f"{r['layer']} on {arch0} (speed-up {r['speedup']:.2f}x)", fontsize=9)
        ax.legend(fontsize=7, title="mapper [OY, OX, C, K tile]", title_fontsize=7, loc="upper left")
    return save(fig, path, "Data moved by type (Fig. 10); labels: mean DRAM moves per tile (1 = no reload; "
                           "OT counts partial-sum spills)")


def _is_preset(arch_name: str) -> bool:
    from costmodel.npu import list_npus
    return arch_name in list_npus()


def _layer(layers: dict[str, list[dict]] | None, network: str, name: str):
    """The `Layer` called ``name`` of ``network`` from the manifest's layer dicts, or None."""
    from costmodel.workload import Layer

    found = [l for l in (layers or {}).get(network, []) if l["name"] == name]
    return Layer(**found[0]) if found else None


def _onchip_bytes(layer, arch_name: str, tiling) -> dict[str, int]:
    """Bytes by type when every tile moves exactly once (an unlimited buffer), for one tiling."""
    from costmodel.npu import Tiling, load_npu
    from mappers.npu.graph import TYPE_NAMES, build_dfg

    g = build_dfg(layer, load_npu(arch_name), Tiling(*tiling))
    out = {"IN": 0, "WT": 0, "OT": 0, "PS": 0}
    for typ, nbytes in zip(g.tile_type, g.tile_final):
        out[TYPE_NAMES[typ]] += nbytes * layer.B * layer.G
    return out


def _gantt(r, layer, network: str, arch_name: str, path: Path) -> str:
    """Rebuild the mapper's best schedule of one layer (stored tiling + dataflow) and draw it."""
    from matplotlib.patches import Rectangle

    from costmodel.npu import Tiling, load_npu
    from mappers.npu.flexer import flexer_schedule
    from mappers.npu.graph import build_dfg

    ex = json.loads(r["extra"])
    window = int(json.loads(r["params"]).get("window", 6))
    eng = flexer_schedule(build_dfg(layer, load_npu(arch_name), Tiling(*ex["tiling"])), ex["dataflow"], window)
    if eng.latency * layer.B * layer.G != r["latency_cycles"]:
        raise RuntimeError(f"rebuilt schedule of {r['layer']} has {eng.latency} cycles, the row "
                           f"{r['latency_cycles']}: rows written by another version of mappers.npu.flexer?")
    trace = eng.trace()
    res = sorted({t[0] for t in trace}, key=lambda s: (s == "dram", s))
    colours = {"tCONV": "tab:blue", "load": "tab:green", "spill": "tab:red", "writeback": "tab:orange"}
    fig, ax = figure(figsize=(13, 0.6 * len(res) + 1.5))
    for resource, s, e, what in trace:
        kind = what.split(" ")[0].split("(")[0]
        ax.barh(res.index(resource), e - s, left=s, color=colours.get(kind, "grey"), edgecolor="none")
    ax.set_yticks(range(len(res)), res)
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    ax.legend(handles, list(colours), fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"Flexer schedule of {network} {r['layer']} on {arch_name}: tiling {ex['tiling']} "
                 f"(OY, OX, C, K tiles), dataflow {ex['dataflow']}, {eng.latency} cycles", fontsize=9)
    return save(fig, path)
