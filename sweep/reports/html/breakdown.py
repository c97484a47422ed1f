"""Per-layer energy of an architecture search's designs by memory level, for the interactive
report (`sweep.reports.html.archsearch`).

The ``rows`` table keeps each layer's best mapping as its temporal loops (``loops``, innermost
first) and, with a ``dataflow`` axis, its unrolling (``spatial``; else the design's own
``[spatial]``); the loop-order mappers' evaluator allocates loops to memories bottom-up (LOMA,
`costmodel.loopnest.allocation.allocate`). Each row's mapping is rebuilt that way and costed by
the reference model (`costmodel.loopnest.reference.evaluate`, about half a millisecond a layer);
its energy goes to the memory levels (the operands' accesses summed per memory) and ``MAC``
(MAC and accumulator energy). A row whose rebuilt cost is not its stored energy and latency to
1e-6 (a mapper that allocates otherwise, e.g. CoSA's MIP boundaries, or no loops stored) keeps
its stored energy whole under `UNSPLIT`, so the bars always add up to the stored totals.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

__all__ = ["MAC", "UNSPLIT", "level_breakdown"]

#: The bar of MAC (and accumulator) energy.
MAC = "MAC"
#: The bar of a layer whose stored mapping could not be re-costed to its stored figures.
UNSPLIT = "not split by level"


def _networks(manifest: dict) -> dict[str, list]:
    """Network name -> its unique layers as (`Layer`, repeat), the order of ``layer_index``."""
    from costmodel.workload import Layer, Network

    out = {}
    for n in (manifest.get("config") or {}).get("networks", []):
        layers = tuple(Layer(**l) for l in n["layers"])
        out[n["name"]] = list(Network(n["name"], layers, tuple(n["repeats"])).unique())
    return out


def _close(a: float, b: float) -> bool:
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1.0)


def _row_levels(row: Any, layer: Any, acc: Any) -> dict[str, float] | None:
    """Energy (pJ, one run of the layer) per memory level and `MAC` of ``row``'s mapping on
    ``acc``; None if it cannot be rebuilt or its cost is not the stored one."""
    from costmodel.loopnest.allocation import allocate
    from costmodel.loopnest.mapping import SpatialMapping
    from costmodel.loopnest.reference import evaluate

    loops = getattr(row, "loops", None)
    if not isinstance(loops, str) or not loops:
        return None
    sp = getattr(row, "spatial", None)
    try:
        spatial = SpatialMapping.from_json(sp) if isinstance(sp, str) and sp else None
        rep = evaluate(layer, acc, allocate(layer, acc, spatial, json.loads(loops)))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not (rep.valid and _close(rep.energy_pj, float(row.energy_pj))
            and _close(rep.latency_cycles, float(row.latency_cycles))):
        return None
    out: dict[str, float] = {}
    for op_levels in rep.breakdown["operands"].values():
        for lv in op_levels:
            out[lv["memory"]] = out.get(lv["memory"], 0.0) + float(lv["energy_pj"])
    out[MAC] = float(rep.breakdown["mac_energy_pj"])
    return out


def level_breakdown(rows: pd.DataFrame, archs: pd.DataFrame, manifest: dict,
                    pairs: set[tuple[str, str]] | None = None) -> dict[str, dict[str, Any]]:
    """Per network: ``layers`` (unique layer names, ``layer_index`` order), ``repeats``,
    ``levels`` (memory names innermost first as met, then `MAC`, then `UNSPLIT` if any row needed
    it), ``designs``: design_id -> per level a list over the layers of energy in pJ x the
    layer's repeat (so a design's bars sum to its network energy), and ``unsplit``: how many
    (design, layer) rows kept their energy whole. Only rows with status "ok" of the (design_id,
    network) ``pairs`` (default all) whose design has an accelerator in ``archs`` count.

    Raises:
        KeyError: a row names a network or layer index the manifest does not have.
    """
    from costmodel.loopnest.arch import accelerator_from_dict

    nets = _networks(manifest)
    accs = {str(r.design_id): accelerator_from_dict(json.loads(r.arch), f"design {r.design_id}")
            for r in archs.drop_duplicates("design_id").itertuples()} if not archs.empty else {}
    ok = rows[rows["status"].astype(str) == "ok"]
    ok = ok.drop_duplicates(["design_id", "network", "layer_index"], keep="first")
    per: dict[str, dict[str, Any]] = {}
    for net, g in ok.groupby(ok["network"].astype(str), sort=False, observed=True):
        unique = nets[net]
        levels: dict[str, None] = {}
        values: dict[str, list[dict[str, float]]] = {}
        unsplit = 0
        for r in g.itertuples():
            did = str(r.design_id)
            if (pairs is not None and (did, net) not in pairs) or did not in accs:
                continue
            layer, rep = unique[int(r.layer_index)]
            lv = _row_levels(r, layer, accs[did])
            if lv is None:
                unsplit += 1
                lv = {UNSPLIT: float(r.energy_pj)}
            levels.update(dict.fromkeys(k for k in lv if k not in (MAC, UNSPLIT)))
            values.setdefault(did, [{} for _ in unique])[int(r.layer_index)] = {k: v * rep for k, v in lv.items()}
        names = list(levels) + [MAC] + ([UNSPLIT] if unsplit else [])
        per[net] = {"layers": [l.name for l, _ in unique], "repeats": [int(n) for _, n in unique],
                    "levels": names, "unsplit": unsplit,
                    "designs": {d: [[float(f"{lay.get(k, 0.0):.7g}") for lay in v] for k in names]
                                for d, v in values.items()}}
    return per
