"""A network's totals from its layers' figures: the one sum that `sweep map --network` and
architecture-search tasks share, so their floats agree to the bit."""

from __future__ import annotations

from typing import Any

__all__ = ["network_totals", "total"]


def total(rows: list[dict[str, Any]], key: str):
    """sum over ``rows`` of ``row[key] * row["repeat"]`` in row order; None if any is None."""
    vals = [r[key] for r in rows]
    return None if any(v is None for v in vals) else sum(v * r["repeat"] for v, r in zip(vals, rows))


def network_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A network's totals from its unique layers' rows (in network order, each with ``repeat``,
    ``energy_pj`` in pJ and ``latency_cycles``): energy and latency summed over the layers times
    their repeats (layers run one after another, as ZigZag sums them) and ``edp`` = total energy x
    total latency (pJ x cycles); None where a layer has none. The one place both `sweep.single.map_network` and
    architecture-search tasks (`sweep.engine.design_tasks`) total a network, so their floats agree
    to the bit."""
    energy, latency = total(rows, "energy_pj"), total(rows, "latency_cycles")
    return {"energy_pj": energy, "latency_cycles": latency,
            "edp": None if energy is None or latency is None else energy * latency}
