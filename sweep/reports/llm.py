"""The transformer steps of a loop-nest result directory: per (step, accelerator, objective,
mapper) the step's energy and latency (its matmuls' best mappings x repeats, then its vector
operations on the accelerator's vector unit, `sweep.engine.totals.step_totals`) and the serving
figures (time to first token or time per output token in s, tokens/s, energy per token in J),
with the step's parameters (``phase``, ``batch``, ``seq``, ``context``) as columns of their own.

The networks and accelerators come from the campaign stored in the directory's manifest (parsed
again; a directory whose inputs no longer parse gets no step table and a note why). A step is
totalled only where every one of its unique layers has a finished row for that mapper;
otherwise its figures are None and ``missing_layers`` says how many are absent. Each row has the
step's DRAM footprint (``memory_bytes``) and the largest batch that fits (``max_batch``) in the
usable share of the DRAM (``gpu_memory_utilization`` of the report, the campaign's ``[architectures]``
key); a step that does not fit it was not mapped there and has a row of its own with the reason in
``does_not_fit`` (`costmodel.capacity`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sweep.common import fmt
from sweep.common.fmt import print_wide

__all__ = ["STEP_COLUMNS", "llm_steps", "print_llm_steps"]

#: The step parameters each row carries as a column.
STEP_COLUMNS = ("model", "phase", "batch", "seq", "context")


def _campaign(directory: Path, manifest: dict):
    """The campaign stored in ``manifest`` (parsed again), or (None, why not)."""
    from sweep.common.errors import SweepError
    from sweep.kinds.load import parse_campaign

    data = manifest.get("campaign")
    if not isinstance(data, dict):
        return None, "no stored campaign in manifest.json"
    source = str(manifest.get("source", "<manifest>"))
    try:
        return parse_campaign(data, source=source, base_dir=Path(manifest.get("base_dir") or Path(source).parent),
                              output=directory), ""
    except (SweepError, OSError, ValueError) as e:
        return None, f"the stored campaign no longer parses: {e}"


def _mapping(layer, arch, best: pd.Series):
    """The mapping of a best unit row: its full mapping (full-mapspace mappers), else the LOMA
    allocation of its loop ordering under its spatial unrolling (loop-order mappers); None if the
    row has neither."""
    import json

    from costmodel.loopnest.allocation import allocate
    from costmodel.loopnest.mapping import Mapping, SpatialMapping
    m = best.get("mapping")
    if isinstance(m, str) and m:
        return Mapping.from_dict(json.loads(m))
    loops = best.get("loops")
    if not isinstance(loops, str) or not loops:
        return None
    sp = best.get("spatial")
    spatial = SpatialMapping.from_json(sp) if isinstance(sp, str) and sp else None
    return allocate(layer, arch, spatial, tuple(tuple(x) for x in json.loads(loops)))


def _dram(network, arch, best: pd.DataFrame) -> dict[str, float] | None:
    """The step's DRAM traffic by role (bits; `costmodel.llm.dram_traffic` x repeats) from the
    best unit row of each of its unique layers (``best``: one seed's rows, ``layer_index`` the
    index in `Network.unique`); None if a layer's mapping cannot be rebuilt."""
    from costmodel.llm import ROLES, dram_traffic
    out = dict.fromkeys(ROLES, 0.0)
    uniq = list(network.unique())
    for _, r in best.drop_duplicates("layer_index").iterrows():
        layer, rep = uniq[int(r["layer_index"])]
        try:
            m = _mapping(layer, arch, r)
            if m is None:
                return None
            for k, v in dram_traffic(layer, arch, m).items():
                out[k] += v * rep
        except (ValueError, KeyError, TypeError):
            return None
    return out


def llm_steps(directory: Path, manifest: dict, layers: list[dict[str, Any]],
              best: pd.DataFrame | None = None) -> dict[str, Any]:
    """``{"steps": [rows], "note": str, "gpu_memory_utilization": the usable share}``: one row per (transformer step, arch, objective,
    mapper label) of the per-layer records ``layers`` (`sweep.reports.loopnest.layer_report`'s
    ``layers``: ``network``, ``layer_index``, ``arch``, ``objective``, ``label``, ``energy_pj``,
    ``latency_cycles``, ``repeat``). With ``best`` (the best unit row per problem, with its
    ``loops`` / ``spatial`` / ``mapping``), each row also has ``dram_bits`` (weights, KV cache,
    activations) and their shares (``dram_weights_share``, ...). Empty when the campaign has no
    transformer step."""
    nets = [n for n in (manifest.get("config") or {}).get("networks", []) if isinstance(n, dict) and n.get("workload")]
    if not nets or not layers:
        return {"steps": [], "note": ""}
    campaign, why = _campaign(directory, manifest)
    if campaign is None:
        return {"steps": [], "note": f"no LLM step figures: {why}"}
    from costmodel.transformer.step import costed_precision
    from sweep.engine.layer_tasks import memory_share
    from sweep.engine.totals import step_totals
    archs = dict(campaign.architectures.archs)
    steps = {n.name: n for n in campaign.networks if n.workload}
    df = pd.DataFrame(layers)
    df = df[df["network"].isin(list(steps))]
    out = []
    for (net, arch, obj, label), g in df.groupby(["network", "arch", "objective", "label"], sort=False):
        network = steps[net]
        unique = len(network.unique())
        missing = unique - g["layer_index"].nunique()
        e = float((g["energy_pj"] * g["repeat"]).sum()) if not missing else None
        lat = float((g["latency_cycles"] * g["repeat"]).sum()) if not missing else None
        tot: dict[str, Any] = {"energy_pj": e, "latency_cycles": lat}
        dram = None
        if best is not None and not missing and arch in archs and "network" in best:
            sel = best[(best["network"] == net) & (best["arch"] == arch) & (best["objective"] == obj)
                       & (best["label"] == label)]
            if len(sel):  # one seed's best rows (the first seed's)
                first = sel["seed"].iloc[0]
                dram = _dram(network, archs[arch], sel[sel["seed"].isna() if pd.isna(first) else sel["seed"] == first])
        lat = None if missing else list(g.drop_duplicates("layer_index").sort_values("layer_index")["latency_cycles"])
        en = None if missing else list(g.drop_duplicates("layer_index").sort_values("layer_index")["energy_pj"])
        vec, llm = (step_totals(tot, network, archs[arch], dram, lat, en, getattr(campaign, "system", None),
                                memory_share(campaign))
                    if arch in archs else ({"not_costed": ""}, None))
        w = network.workload
        row = {k: w.get(k) for k in STEP_COLUMNS}
        row.update({"network": net, "arch": arch, "objective": obj, "mapper": label, "missing_layers": missing,
                    "matmul_energy_pj": tot["matmul_energy_pj"], "vector_energy_pj": tot.get("vector_energy_pj"),
                    "energy_pj": tot["energy_pj"], "latency_cycles": tot["latency_cycles"],
                    "not_costed": vec.get("not_costed", ""), "launches": tot.get("launches"),
                    "launch_s": (tot["launch_cycles"] / (llm or {})["clock_mhz"] / 1e6
                                 if tot.get("launch_cycles") and llm else None)})
        for k in ("latency_s", "ttft_s", "time_per_token_s", "tokens_per_s", "energy_per_token_j"):
            row[k] = (llm or {}).get(k)
        row["memory_bytes"] = ((llm or {}).get("memory") or {}).get("total_bytes")
        row["max_batch"] = (llm or {}).get("max_batch")
        row["does_not_fit"] = ""
        row["precision"] = (costed_precision(w.get("precision"), (llm or {}).get("precisions")) or {}).get("text")
        d = tot.get("dram_bits")
        row["dram_bits"] = sum(d.values()) if d else None
        for k in ("weights", "kv_cache", "activations"):
            row[f"dram_{k}_share"] = d[k] / sum(d.values()) if d and sum(d.values()) else None
        out.append(row)
    from costmodel.transformer.step import costed_precision
    from sweep.engine.layer_tasks import unfit_steps
    from sweep.engine.totals import step_precisions
    for net, arch, why in unfit_steps(campaign):  # not mapped: the footprint says why
        w = steps[net].workload
        out.append({**{k: w.get(k) for k in STEP_COLUMNS}, "network": net, "arch": arch, "objective": "-",
                    "mapper": "-", "missing_layers": len(steps[net].unique()), "does_not_fit": why,
                    **dict.fromkeys(("matmul_energy_pj", "vector_energy_pj", "energy_pj", "latency_cycles",
                                     "latency_s", "ttft_s", "time_per_token_s", "tokens_per_s",
                                     "energy_per_token_j", "memory_bytes", "max_batch", "dram_bits",
                                     "dram_weights_share", "dram_kv_cache_share", "dram_activations_share")),
                    "not_costed": "", "precision": (costed_precision(w.get("precision"), step_precisions(
                        steps[net], archs[arch])) or {}).get("text") if arch in archs else None})
    order = {name: i for i, name in enumerate(steps)}  # the campaign's order of its steps
    out.sort(key=lambda r: order[r["network"]])
    return {"steps": out, "note": "", "gpu_memory_utilization": memory_share(campaign)}


def _bytes(v: Any) -> str:
    """A footprint in GB / MB (`costmodel.capacity.gb`), n/a when unknown."""
    from costmodel.capacity import gb
    return "n/a" if v is None or pd.isna(v) else gb(v)


def _shares(r: dict[str, Any]) -> str:
    """``96% / 3.4% / 0.1%``: the weights', KV cache's and activations' shares of DRAM traffic."""
    vals = [r.get(f"dram_{k}_share") for k in ("weights", "kv_cache", "activations")]
    return "n/a" if any(v is None for v in vals) else " / ".join(f"{v:.3g}%" for v in (100 * v for v in vals))


def step_precisions_text(networks) -> dict[str, list[str]]:
    """``{precision text: [step names]}`` of the transformer steps among ``networks``
    (`costmodel.transformer.step.precision_text` of each ``workload["precision"]``: the bits and
    where they come from, the checkpoint, given or the accelerator's ``[precision]``)."""
    from costmodel.transformer.step import precision_text
    out: dict[str, list[str]] = {}
    for n in networks:
        if getattr(n, "workload", None) and n.workload.get("model"):
            out.setdefault(precision_text(n.workload.get("precision")), []).append(n.name)
    return out


def _bits(text: str | None) -> str:
    """``16/16/16`` of a row's precision text ("W/A/KV 16/16/16 bits (...)"), n/a when unknown."""
    return text.split()[1] if text and text.startswith("W/A/KV ") else "n/a"


def print_llm_steps(rep: dict[str, Any], console) -> None:
    """The step table of `llm_steps` (``rep["llm"]``) with engineering units."""
    from rich.table import Table

    llm = rep.get("llm") or {}
    if llm.get("note"):
        console.print(llm["note"], style="yellow", soft_wrap=True, highlight=False, markup=False)
    steps = llm.get("steps") or []
    if not steps:
        return
    t = Table(title="LLM steps: matmuls (best mapping per layer) + vector operations; per token at the accelerator's clock")
    cols = ("step", "phase", "batch", "seq", "context", "arch", "objective", "mapper", "energy", "vector share",
            "TTFT / time per token", "tokens/s", "energy per token", "DRAM per step", "weights / KV / act.",
            "memory", "max batch", "W/A/KV bits")
    for c in cols:
        t.add_column(c, justify="left" if c in ("step", "phase", "arch", "objective", "mapper") else "right")
    for r in steps:
        share = (r["vector_energy_pj"] / r["energy_pj"]) if r.get("vector_energy_pj") is not None and r["energy_pj"] else None
        per = r["ttft_s"] if r["phase"] == "prefill" else r["time_per_token_s"]
        ept = None if r["energy_per_token_j"] is None else r["energy_per_token_j"] * 1e12
        t.add_row(r["network"], str(r["phase"]), str(r["batch"]), "-" if r["seq"] is None else str(r["seq"]),
                  "-" if r["context"] is None else str(r["context"]), r["arch"], r["objective"], r["mapper"],
                  fmt.energy(r["energy_pj"]), "n/a" if share is None else f"{share:.2%}",
                  fmt.seconds(per), fmt.sig(r["tokens_per_s"]), fmt.energy(ept), fmt.bits(r.get("dram_bits")),
                  _shares(r), "does not fit" if r.get("does_not_fit") else _bytes(r.get("memory_bytes")),
                  "-" if r.get("max_batch") is None else f"{r['max_batch']:,}", _bits(r.get("precision")))
    print_wide(console, t)
    for text in dict.fromkeys(r["precision"] for r in steps if r.get("precision")):
        names = [r["network"] for r in steps if r.get("precision") == text]
        console.print(f"precisions of {len(names)} step row(s) ({names[0]}{', ...' if len(names) > 1 else ''}): {text}",
                      soft_wrap=True, highlight=False, markup=False)
    if llm.get("gpu_memory_utilization") is not None:
        console.print(f"memory, max batch: against {llm['gpu_memory_utilization']:.2f} of each accelerator's DRAM "
                      "(gpu_memory_utilization, [architectures]; vLLM's default 0.9, the rest the runtime's)",
                      soft_wrap=True, highlight=False, markup=False)
    for arch in dict.fromkeys(r["arch"] for r in steps if r.get("launch_s")):
        sel = [r for r in steps if r["arch"] == arch and r.get("launch_s")]
        lo, hi = min(sel, key=lambda r: r["launch_s"]), max(sel, key=lambda r: r["launch_s"])
        span = (f"{lo['launches']:,} = {fmt.seconds(lo['launch_s'])}" if lo is hi else
                f"{lo['launches']:,} = {fmt.seconds(lo['launch_s'])} to {hi['launches']:,} = {fmt.seconds(hi['launch_s'])}")
        console.print(f"{arch}: the times include a fixed cost per kernel launch (launch_overhead_us "
                      f"{lo['launch_s'] / lo['launches'] * 1e6:g} us): launches per step {span}",
                      soft_wrap=True, highlight=False, markup=False)
    notes = sorted({r["not_costed"] for r in steps if r.get("not_costed")})
    for n in notes:
        console.print(f"not costed: {n}", soft_wrap=True, highlight=False, markup=False)
    for r in steps:
        if r.get("does_not_fit"):
            console.print(f"{r['network']} on {r['arch']} does not fit, not mapped: {r['does_not_fit']}",
                          style="yellow", soft_wrap=True, highlight=False, markup=False)
    gaps = [r for r in steps if r["missing_layers"] and not r.get("does_not_fit")]
    if gaps:
        console.print(f"{len(gaps)} step(s) without figures: some of their layers have no finished row "
                      f"(missing_layers)", style="yellow", highlight=False)


# -- architecture search over transformer steps -------------------------------------------------

#: The figure each phase's best design minimises, and the label of its side of the answer.
_BEST_FOR = (("prefill", "ttft_s", "time to first token"), ("decode", "time_per_token_s", "time per output token"),
             ("mix", "request_latency_s", "request latency (serving mix)"))


def _gmean(v: pd.Series) -> float | None:
    import numpy as np
    v = v.dropna().astype(float)
    return float(np.exp(np.log(v).mean())) if len(v) and (v > 0).all() else None


def design_figures(totals: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Per design (its finished step rows): ``area_mm2``, the parameters, ``ttft_s`` (geometric
    mean over its prefill steps), ``time_per_token_s``, ``tokens_per_s`` and
    ``energy_per_token_j`` (over its decode steps), and the serving mix's ``request_latency_s``,
    ``requests_per_s``, ``energy_per_request_j`` when the campaign has one. A phase with a step that
    did not finish on a design (it does not fit its DRAM, or failed) has no figure there: a mean over
    the steps that fit would flatter a design too small for the rest."""
    ok = totals[totals["status"] == "ok"]
    unfinished = totals[totals["status"] != "ok"].groupby("design_id")["phase"].agg(set).to_dict()
    out = []
    for did, g in ok.groupby("design_id", sort=False):
        pre, dec, mix = (g[(g["phase"] == p) & (p not in unfinished.get(did, ()))] for p in ("prefill", "decode", "mix"))
        row = {"design_id": did, "area_mm2": float(g["area_mm2"].iloc[0]),
               **{p: g[p].iloc[0] for p in params if p in g},
               "ttft_s": _gmean(pre["ttft_s"]), "time_per_token_s": _gmean(dec["time_per_token_s"]),
               "tokens_per_s": _gmean(dec["tokens_per_s"]), "energy_per_token_j": _gmean(dec["energy_per_token_j"])}
        for k in ("request_latency_s", "requests_per_s", "energy_per_request_j"):
            row[k] = float(mix[k].iloc[0]) if len(mix) and k in mix and pd.notna(mix[k].iloc[0]) else None
        out.append(row)
    return pd.DataFrame(out)


#: Each step's own figure by phase: what a prefill step and a decode step are measured by.
_STEP_FIGURE = {"prefill": ("ttft_s", "TTFT"), "decode": ("time_per_token_s", "time per output token")}


def step_aggregates(totals: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """What each phase figure of `design_figures` aggregates (issue 43, item 3): figure ->
    ``steps`` (the step names of that phase, every one the campaign runs: the serving mix's steps
    too, which join its networks) and ``how`` (a geometric mean, over the steps, one value each;
    batches are not weighted)."""
    out = {}
    for phase, (fig, _) in _STEP_FIGURE.items():
        names = sorted(set(totals.loc[totals["phase"] == phase, "network"].astype(str)))
        if names:
            out[fig] = {"steps": names, "how": f"geometric mean over {len(names)} {phase} step(s), one value each"}
    return out


def step_figures(totals: pd.DataFrame, designs: list[str]) -> list[dict[str, Any]]:
    """Each step's own figure on each of ``designs`` (TTFT of a prefill step, time per output token
    of a decode step; None where it did not finish), one record per step: ``step``, ``phase``,
    ``batch``, ``seq``, ``context``, ``figure`` and ``values`` (design_id -> seconds)."""
    ok = totals[(totals["status"] == "ok") & totals["phase"].isin(list(_STEP_FIGURE))]
    out = []
    for name, g in ok.groupby("network", sort=True):
        phase = str(g["phase"].iloc[0])
        fig = _STEP_FIGURE[phase][0]
        by = g.drop_duplicates("design_id").set_index("design_id")[fig]
        first = g.iloc[0]
        out.append({"step": str(name), "phase": phase, "figure": fig,
                    **{k: (None if pd.isna(first.get(k)) else int(first[k])) for k in ("batch", "seq", "context")},
                    "values": {d: (float(by[d]) if d in by.index and pd.notna(by[d]) else None) for d in designs}})
    return out


def llm_designs(totals: pd.DataFrame, rows: pd.DataFrame | None, archs: pd.DataFrame, params: list[str],
                networks: list, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The answer of an architecture search over transformer steps: per phase (prefill, decode,
    the serving mix) the Pareto front of area against that phase's figure and the best design,
    the best designs side by side (the fastest, and the most area-efficient: least figure x area), each one's roofline (`costmodel.roofline`: every layer of its
    first prefill and first decode step, from the stored orderings and unrollings) and where its
    energy goes (`costmodel.llm.energy_breakdown`, the same steps); with ``plots_dir``
    ``roofline.png``. Empty when no total carries a phase."""
    from sweep.reports.pareto import pareto_front

    if "phase" not in totals or totals["phase"].isna().all():
        return {}
    df = design_figures(totals, params)
    out: dict[str, Any] = {"best": [], "fronts": {}, "aggregates": step_aggregates(totals)}
    for phase, fig, label in _BEST_FOR:
        if fig not in df or df[fig].isna().all():
            continue
        d = df[df[fig].notna()]
        front = d.iloc[pareto_front(d[["area_mm2", fig]].to_numpy(dtype=float))].sort_values(
            ["area_mm2", fig, "design_id"])
        out["fronts"][phase] = front.to_dict("records")
        # ties (designs that differ only where the figure does not look) go to the smaller design,
        # then the design id: the answer does not depend on the order designs were stored in
        d = d.assign(_fig=d[fig].astype(float), _eff=d[fig].astype(float) * d["area_mm2"])
        best = d.sort_values(["_fig", "area_mm2", "design_id"]).iloc[0].drop(["_fig", "_eff"]).to_dict()
        out["best"].append({"for": phase, "label": label, **best})
        # the most area-efficient: least figure x area (most tokens or requests per s per mm^2)
        eff = d.sort_values(["_eff", "area_mm2", "design_id"]).iloc[0].drop(["_fig", "_eff"]).to_dict()
        out["best"].append({"for": f"{phase} per mm^2", "label": f"{label} x area", **eff})
    out["steps"] = step_figures(totals, [b["design_id"] for b in out["best"]])
    out["rooflines"], out["breakdowns"] = _design_details(out["best"], rows, archs, networks)
    if plots_dir is not None and out["rooflines"]:
        out["plots"] = [write_roofline_plot(out["rooflines"], Path(plots_dir) / "roofline.png")]
    return out


def _design_mappings(network, acc, rows: pd.DataFrame) -> list | None:
    """The mapping of each unique layer of ``network`` on design ``acc`` from its stored rows
    (``loops`` and, where the unrolling was searched, ``spatial``): the LOMA allocation of each
    ordering (`costmodel.loopnest.allocation.allocate`); None if a layer has no finished row."""
    import json
    import math

    from costmodel.loopnest.allocation import allocate
    from costmodel.loopnest.mapping import SpatialMapping
    from costmodel.loopnest.reference import evaluate
    by = {int(r["layer_index"]): r for _, r in rows.iterrows() if r["status"] == "ok"}
    out = []
    for li, (layer, _) in enumerate(network.unique()):
        r = by.get(li)
        if r is None or not isinstance(r.get("loops"), str):
            return None
        sp = r.get("spatial")
        spatial = SpatialMapping.from_json(sp) if isinstance(sp, str) and sp else None
        m = allocate(layer, acc, spatial, tuple(tuple(x) for x in json.loads(r["loops"])))
        if not math.isclose(evaluate(layer, acc, m).energy_pj, float(r["energy_pj"]), rel_tol=1e-6):
            return None  # not the stored mapping (another mapper's allocation): no figure rather than a wrong one
        out.append(m)
    return out


def _design_details(best: list[dict], rows: pd.DataFrame | None, archs: pd.DataFrame,
                    networks: list) -> tuple[list[dict], list[dict]]:
    """Rooflines and energy breakdowns of the best designs (`llm_designs`): per design its first
    prefill and first decode step (the campaign's order)."""
    import json

    from costmodel.llm import energy_breakdown
    from costmodel.loopnest.arch import accelerator_from_dict
    from costmodel.roofline import dram_bytes_per_cycle, ridge_point, roofline_points
    if rows is None or rows.empty or "loops" not in rows:
        return [], []
    steps = [next((n for n in networks if (n.workload or {}).get("phase") == ph), None) for ph in ("prefill", "decode")]
    roofs, breaks = [], []
    labels: dict[str, list[str]] = {}
    for b in best:  # one design may be the best for several phases: its details once, all its labels
        labels.setdefault(b["design_id"], []).append(b["for"])
    for did, whats in labels.items():
        b = {"design_id": did, "for": ", ".join(whats)}
        a = archs[archs["design_id"] == b["design_id"]]
        if a.empty:
            continue
        acc = accelerator_from_dict(json.loads(a["arch"].iloc[0]), f"design {b['design_id']}")
        for net in (n for n in steps if n is not None):
            r = rows[(rows["design_id"] == b["design_id"]) & (rows["network"] == net.name)]
            maps = _design_mappings(net, acc, r)
            if maps is None:
                continue
            lat = r.drop_duplicates("layer_index").sort_values("layer_index")["latency_cycles"].tolist()
            pts = roofline_points(net, acc, [{"mapping": m, "latency_cycles": x} for m, x in zip(maps, lat)])
            roofs.append({"for": b["for"], "design_id": b["design_id"], "network": net.name,
                          "peak_macs_per_cycle": acc.pe_count, "dram_bytes_per_cycle": dram_bytes_per_cycle(acc),
                          "ridge": ridge_point(acc), "points": [p.to_dict() for p in pts]})
            br = energy_breakdown(net, acc, maps)
            breaks.append({"for": b["for"], "design_id": b["design_id"], "network": net.name, **br})
    return roofs, breaks


def write_roofline_plot(rooflines: list[dict], path: Path) -> str:
    """``roofline.png``: one panel per best design, attained MACs per cycle against operational
    intensity (MACs per DRAM byte, both log), each layer of its steps a point (marker per step),
    the design's roof (min(peak, intensity x DRAM bytes per cycle)) drawn."""
    import numpy as np

    from sweep.reports.plots import figure, save
    designs = list(dict.fromkeys((r["for"], r["design_id"]) for r in rooflines))
    fig, axes = figure(1, len(designs), figsize=(5.2 * len(designs), 4.4))
    axes = np.atleast_1d(axes)
    for ax, (what, did) in zip(axes, designs):
        mine = [r for r in rooflines if r["design_id"] == did and r["for"] == what]
        xs = [p["intensity"] for r in mine for p in r["points"] if np.isfinite(p["intensity"])]
        lo, hi = min(xs + [1.0]) / 2, max(xs + [mine[0]["ridge"]]) * 2
        grid = np.logspace(np.log10(lo), np.log10(hi), 200)
        r0 = mine[0]
        ax.plot(grid, np.minimum(r0["peak_macs_per_cycle"], grid * r0["dram_bytes_per_cycle"]), color="black", lw=1.5,
                label=f"roof (ridge {r0['ridge']:.3g} MACs/B)")
        for r, marker in zip(mine, ("o", "s", "^")):
            pts = [p for p in r["points"] if np.isfinite(p["intensity"])]
            ax.scatter([p["intensity"] for p in pts], [p["attained"] for p in pts], marker=marker, s=28,
                       label=r["network"], alpha=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("operational intensity, MACs per DRAM byte")
        ax.set_ylabel("attained MACs per cycle")
        ax.set_title(f"{did}: best for {what}", fontsize=9)
        ax.legend(fontsize=7)
    return save(fig, path, "roofline")


def best_columns(best: list[dict]) -> list[tuple[str, str]]:
    """One (design_id, heading) per distinct design of ``best`` (`llm_designs`' ``best``), in
    first-seen order, the heading naming every phase the design is best for: ``"<id> (best for
    prefill, decode per mm^2)"``."""
    fors: dict[str, list[str]] = {}
    for b in best:
        fors.setdefault(str(b["design_id"]), []).append(str(b["for"]))
    return [(d, f"{d} (best for {', '.join(f)})") for d, f in fors.items()]


def _print_steps(steps: list[dict], best: list[dict], console) -> None:
    """Each step under its own label (phase, batch, seq or context, its figure) on the best designs."""
    from rich.table import Table
    if not steps:
        return
    t = Table(title="Each step on the best designs: TTFT of a prefill step, time per output token of a decode step")
    for c in ("step", "phase", "batch", "seq / context", "figure"):
        t.add_column(c, justify="left" if c in ("step", "phase", "figure") else "right")
    cols = best_columns(best)
    for _, heading in cols:
        t.add_column(heading, justify="right")
    for s in steps:
        t.add_row(s["step"], s["phase"], str(s["batch"]), str(s["seq"] if s["phase"] == "prefill" else s["context"]),
                  _STEP_FIGURE[s["phase"]][1], *(fmt.seconds(s["values"].get(d)) for d, _ in cols))
    print_wide(console, t)


def print_llm_designs(rep: dict[str, Any], console) -> None:
    """The best designs for prefill, decode and the serving mix side by side, then where their
    energy goes (the largest cells)."""
    from rich.table import Table

    llm = rep.get("llm") or {}
    best = llm.get("best") or []
    if not best:
        return
    params = rep.get("params", [])
    t = Table(title="Which accelerator: the best design for each phase (each phase's figure a geometric mean over "
                    "its steps, listed below; each step's own figure in the next table)")
    t.add_column("")
    for b in best:
        t.add_column(f"best for {b['for']}", justify="right")
    rows = [("design", lambda b: b["design_id"]), ("area", lambda b: fmt.area(b["area_mm2"])),
            *((p, (lambda p: lambda b: str(b.get(p)))(p)) for p in params),
            ("TTFT (prefill)", lambda b: fmt.seconds(b.get("ttft_s"))),
            ("time per output token (decode)", lambda b: fmt.seconds(b.get("time_per_token_s"))),
            ("tokens/s (decode)", lambda b: fmt.sig(b.get("tokens_per_s"))),
            ("energy per token (decode)", lambda b: fmt.energy(None if b.get("energy_per_token_j") is None
                                                                 else b["energy_per_token_j"] * 1e12)),
            ("request latency (mix)", lambda b: fmt.seconds(b.get("request_latency_s"))),
            ("requests/s (mix)", lambda b: fmt.sig(b.get("requests_per_s"))),
            ("energy per request (mix)", lambda b: fmt.energy(None if b.get("energy_per_request_j") is None
                                                                else b["energy_per_request_j"] * 1e12))]
    for name, f in rows:
        t.add_row(name, *(f(b) for b in best))
    print_wide(console, t)
    for fig, agg in (llm.get("aggregates") or {}).items():
        console.print(f"{fig}: {agg['how']}: {', '.join(agg['steps'])}", soft_wrap=True, highlight=False,
                      markup=False)
    _print_steps(llm.get("steps") or [], best, console)
    figs = {phase: (fig, label) for phase, fig, label in _BEST_FOR}
    for phase, front in (llm.get("fronts") or {}).items():
        fig, label = figs[phase]
        f = Table(title=f"Pareto front of area against {label} ({phase}; {len(front)} design(s))")
        for c in ("design", "area", label):
            f.add_column(c, justify="left" if c == "design" else "right")
        for r in front[:15]:
            f.add_row(str(r["design_id"]), fmt.area(r["area_mm2"]), fmt.seconds(r[fig]))
        print_wide(console, f)
    for br in llm.get("breakdowns") or []:
        top = ", ".join(f"{c['where']} {c['carries']} {c['share']:.1%}" for c in br["cells"][:5])
        console.print(f"energy of {br['network']} on the best design for {br['for']} ({br['design_id']}): "
                      f"{fmt.energy(br['total_pj'])}: {top}", soft_wrap=True, highlight=False, markup=False)
    for r in llm.get("rooflines") or []:
        mem = sum(1 for p in r["points"] if p["bound"] == "memory")
        console.print(f"roofline of {r['network']} on {r['design_id']} (best for {r['for']}): ridge "
                      f"{r['ridge']:.4g} MACs per DRAM byte; {mem} of {len(r['points'])} unique layers memory-bound",
                      soft_wrap=True, highlight=False, markup=False)
