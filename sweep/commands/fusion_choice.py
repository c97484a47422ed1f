"""``fusion = "auto"``: how a transformer step's attention runs, chosen by mapping.

A step's attention can run unfused (scores and probabilities through memory) or fused with a query
tile and a K/V tile (`costmodel.transformer.attention`). Which is cheaper depends on the hardware and the
objective: a larger query tile reads K and V fewer times but needs the tile's scores on chip, a
larger K/V tile rescales the partial output fewer times; on a chip whose on-chip memory cannot hold
a tile the fused tile layers have no valid mapping and that variant drops out. `map_step_auto`
builds every variant of `costmodel.transformer.attention.fusion_variants`, maps each with the same mapper,
objective and seed (a layer the variants share, every projection and FFN matmul, mapped once), and
keeps the one whose step figure under the objective is least: energy (pJ), the step's latency
(cycles, after the vector unit's overlap, `sweep.engine.totals.step_totals`) or EDP; ties on the
objective go to the least energy, then to the earlier variant (unfused first, then smaller tiles).
The result is what `map_network` gives for the chosen step, plus ``fusion_choice``: one row per
variant (its figures, ``status``, ``chosen``)."""

from __future__ import annotations

import math
from typing import Any, Callable

from sweep.common.errors import CampaignError, Finding

__all__ = ["AUTO", "map_step_auto", "choice_rows"]

#: The ``fusion`` value that asks for the choice.
AUTO = "auto"


def _value(tot: dict[str, Any], objective: str) -> float:
    """The step's figure under ``objective`` (inf when it has none: a layer without a valid mapping)."""
    e, lat = tot.get("energy_pj"), tot.get("latency_cycles")
    v = {"energy": e, "latency": lat, "edp": None if e is None or lat is None else e * lat}.get(objective)
    return math.inf if v is None or not math.isfinite(v) else float(v)


def map_step_auto(network: str, workload: dict[str, Any], arch, mapper_name: str, objective: str | None = None,
                  seed: int = 0, params: dict[str, Any] | None = None,
                  progress: Callable[[int, int, str], None] | None = None,
                  gpu_memory_utilization: float | None = None) -> dict[str, Any]:
    """Map every attention variant of the transformer step ``network`` (a zoo model or a step's name)
    with ``workload`` (`sweep.commands.map_eval.WORKLOAD_OPTIONS`; ``fusion`` "auto", no tiles) on
    the loop-nest accelerator ``arch`` and keep the best (module docstring); its capacity checked
    at ``gpu_memory_utilization`` of the DRAM (`map_network`'s).

    Returns:
        `map_network`'s dict of the chosen variant with ``fusion_choice``: rows ``{"network",
        "fusion", "query_tile", "kv_tile", "status", "energy_pj", "latency_cycles", "edp",
        "dram_bits", "value", "chosen"}`` in `fusion_variants` order (energy in pJ, latency in
        cycles, EDP in pJ x cycles, DRAM traffic in bits per step).
        ``progress(done, total, name)`` is called per variant and once at the end.

    Raises:
        CampaignError: a tile given with ``auto`` (``--query-tile`` / ``--kv-tile``), a network that is
            not a transformer step, and everything `map_network` raises (on the first variant).
        DoesNotFitError: the step does not fit the DRAM (every variant holds the same weights and KV cache).
    """
    from costmodel.transformer.attention import fusion_variants
    from sweep.commands.map_eval import WORKLOAD_OPTIONS, map_network, resolve_network

    for k in ("query_tile", "kv_tile"):
        if workload.get(k) is not None:
            raise CampaignError("--fusion", [Finding(WORKLOAD_OPTIONS[k], workload[k],
                                                     "--fusion auto chooses the tiles; give --fusion fused with "
                                                     "a tile to map that one")])
    base = resolve_network(network, {**workload, "fusion": "unfused"})
    w = base.workload or {}
    if not w.get("model"):
        raise CampaignError("--fusion", [Finding("--fusion", AUTO, f"{base.name} is not a transformer step")])
    q_len = w["seq"] if w["phase"] == "prefill" else 1
    attended = w["seq"] if w["phase"] == "prefill" else w["context"]
    variants = fusion_variants(q_len, attended)
    cache: dict = {}
    results: list[dict[str, Any]] = []
    for i, v in enumerate(variants):
        net = base if v["fusion"] == "unfused" else resolve_network(network, {**workload, **v})
        if progress:
            progress(i, len(variants), net.name)
        results.append(map_network(net, arch, mapper_name, objective, seed, params, cache=cache,
                                   gpu_memory_utilization=gpu_memory_utilization))
    if progress:
        progress(len(variants), len(variants), "")
    used = results[0]["objective"]
    keys = [(_value(r["total"], used), _value(r["total"], "energy"), i) for i, r in enumerate(results)]
    best = min(keys)[2]
    out = dict(results[best])
    out["fusion_choice"] = choice_rows(variants, results, used, best)
    return out


def choice_rows(variants: list[dict], results: list[dict[str, Any]], objective: str, chosen: int) -> list[dict]:
    """`map_step_auto`'s ``fusion_choice`` rows (its Returns)."""
    rows = []
    for i, (v, r) in enumerate(zip(variants, results)):
        tot = r["total"]
        value = _value(tot, objective)
        dram = tot.get("dram_bits")
        rows.append({"network": r["network"], "fusion": v["fusion"], "query_tile": v.get("query_tile"),
                     "kv_tile": v.get("kv_tile"), "status": "ok" if math.isfinite(value) else "infeasible",
                     "energy_pj": tot.get("energy_pj"), "latency_cycles": tot.get("latency_cycles"),
                     "edp": tot.get("edp"), "dram_bits": None if dram is None else sum(dram.values()),
                     "value": value if math.isfinite(value) else None, "chosen": i == chosen})
    return rows
