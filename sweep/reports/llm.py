"""The transformer steps of a loop-nest result directory: per (step, accelerator, objective,
mapper) the step's energy and latency (its matmuls' best mappings x repeats, then its vector
operations on the accelerator's vector unit, `sweep.engine.totals.step_totals`) and the serving
figures (time to first token or time per output token in s, tokens/s, energy per token in J),
with the step's parameters (``phase``, ``batch``, ``seq``, ``context``) as columns of their own.

The networks and accelerators come from the campaign stored in the directory's manifest (parsed
again; a directory whose inputs no longer parse gets no step table and a note why). A step is
totalled only where every one of its unique layers has a finished row for that mapper;
otherwise its figures are None and ``missing_layers`` says how many are absent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sweep import fmt
from sweep.fmt import print_wide

__all__ = ["STEP_COLUMNS", "llm_steps", "print_llm_steps"]

#: The step parameters each row carries as a column.
STEP_COLUMNS = ("model", "phase", "batch", "seq", "context")


def _campaign(directory: Path, manifest: dict):
    """The campaign stored in ``manifest`` (parsed again), or (None, why not)."""
    from sweep.errors import SweepError
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
    spatial = SpatialMapping.from_dict(json.loads(sp)) if isinstance(sp, str) and sp else None
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
    """``{"steps": [rows], "note": str}``: one row per (transformer step, arch, objective,
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
        vec, llm = step_totals(tot, network, archs[arch], dram) if arch in archs else ({"not_costed": ""}, None)
        w = network.workload
        row = {k: w.get(k) for k in STEP_COLUMNS}
        row.update({"network": net, "arch": arch, "objective": obj, "mapper": label, "missing_layers": missing,
                    "matmul_energy_pj": tot["matmul_energy_pj"], "vector_energy_pj": tot.get("vector_energy_pj"),
                    "energy_pj": tot["energy_pj"], "latency_cycles": tot["latency_cycles"],
                    "not_costed": vec.get("not_costed", "")})
        for k in ("latency_s", "ttft_s", "time_per_token_s", "tokens_per_s", "energy_per_token_j"):
            row[k] = (llm or {}).get(k)
        d = tot.get("dram_bits")
        row["dram_bits"] = sum(d.values()) if d else None
        for k in ("weights", "kv_cache", "activations"):
            row[f"dram_{k}_share"] = d[k] / sum(d.values()) if d and sum(d.values()) else None
        out.append(row)
    order = {name: i for i, name in enumerate(steps)}  # the campaign's order of its steps
    out.sort(key=lambda r: order[r["network"]])
    return {"steps": out, "note": ""}


def _shares(r: dict[str, Any]) -> str:
    """``96% / 3.4% / 0.1%``: the weights', KV cache's and activations' shares of DRAM traffic."""
    vals = [r.get(f"dram_{k}_share") for k in ("weights", "kv_cache", "activations")]
    return "n/a" if any(v is None for v in vals) else " / ".join(f"{v:.3g}%" for v in (100 * v for v in vals))


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
            "TTFT / time per token", "tokens/s", "energy per token", "DRAM per step", "weights / KV / act.")
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
                  _shares(r))
    print_wide(console, t)
    notes = sorted({r["not_costed"] for r in steps if r.get("not_costed")})
    for n in notes:
        console.print(f"not costed: {n}", soft_wrap=True, highlight=False, markup=False)
    gaps = [r for r in steps if r["missing_layers"]]
    if gaps:
        console.print(f"{len(gaps)} step(s) without figures: some of their layers have no finished row "
                      f"(missing_layers)", style="yellow", highlight=False)
