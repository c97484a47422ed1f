"""What a chip costs to make: the die from its area (wafer price, dies per wafer, yield), its DRAM and
its package, in US dollars. The model and its figures are those of ttm-cas (Ning et al., "Supply
Chain Aware Computer Architecture", ISCA 2023; github.com/PrincetonUniversity/ttm-cas,
``supply_chain_model.py``, commit d98ac05), the cost model LLMCompass (Zhang et al., ISCA 2024) uses:

* dies per 300 mm wafer = pi (d / 2)^2 / A - pi d / sqrt(2 A) (d = 300 mm, A the die area in mm^2);
* yield = (1 + A D0 / alpha)^-alpha, the negative-binomial model with clustering alpha = 3, D0 the
  defect density per mm^2 of the node (ttm-cas's estimates from TSMC's slides);
* die cost = wafer price / (dies per wafer x yield), the wafer prices of Khan and Mann, "AI Chips: What
  They Are and Why They Matter" (CSET, 2020), as ttm-cas tabulates them;
* package: $20 and $1 of assembly (ttm-cas's Moonwalk figures); DRAM: $7 per GB of HBM and $2.4 per GB
  of DDR5 (DRAMeXchange spot prices, October 2023, as LLMCompass's ``cost_model.py`` has them; LPDDR5
  and GDDR at DDR5's, an assumption).

Our area model is at 22 nm (the CACTI 22 nm tables); the default node is 20 nm, the nearest ttm-cas
lists. What is left out: masks, design and verification (non-recurring), test, margins.

Errors: ValueError naming the argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["NODES", "Node", "dies_per_wafer", "die_yield", "die_cost_usd", "chip_cost_usd", "DRAM_USD_PER_GB",
           "PACKAGE_USD"]


@dataclass(frozen=True)
class Node:
    """A process node: ``wafer_usd`` (a 300 mm wafer), ``d0_per_mm2`` (defects per mm^2)."""

    nm: int
    wafer_usd: float
    d0_per_mm2: float


#: ttm-cas's table (module docstring), by node in nm.
NODES: dict[int, Node] = {nm: Node(nm, w, d * 1e-6) for nm, w, d in (
    (250, 900, 500), (180, 1020, 500), (130, 1580, 500), (90, 1650, 500), (65, 1937, 500), (40, 2274, 500),
    (28, 2891, 500), (20, 3677, 800), (14, 3984, 1000), (10, 5992, 1200), (7, 9346, 1500), (5, 16988, 2000))}

#: DRAM price per GB (1e9 bytes) by kind (module docstring).
DRAM_USD_PER_GB = {"hbm2e": 7.0, "hbm3": 7.0, "ddr5": 2.4, "lpddr5": 2.4, "gddr6": 2.4}
#: A package and its assembly (USD).
PACKAGE_USD = 21.0
_WAFER_MM = 300.0
_ALPHA = 3.0


def _area(area_mm2: float) -> float:
    if isinstance(area_mm2, bool) or not isinstance(area_mm2, (int, float)) or not math.isfinite(area_mm2) \
            or area_mm2 <= 0:
        raise ValueError(f"area_mm2 = {area_mm2!r}: expected a positive number of mm^2")
    return float(area_mm2)


def dies_per_wafer(area_mm2: float) -> float:
    """Dies of ``area_mm2`` on a 300 mm wafer (gross, edge loss included; module docstring).

    Raises:
        ValueError: a non-positive area, or a die too large for the wafer."""
    a = _area(area_mm2)
    n = math.pi * (_WAFER_MM / 2) ** 2 / a - math.pi * _WAFER_MM / math.sqrt(2 * a)
    if n < 1:
        raise ValueError(f"area_mm2 = {area_mm2!r}: less than one die fits a 300 mm wafer")
    return n


def die_yield(area_mm2: float, node_nm: int = 20) -> float:
    """The share of good dies: (1 + A D0 / 3)^-3 (module docstring)."""
    return (1 + _area(area_mm2) * _node(node_nm).d0_per_mm2 / _ALPHA) ** -_ALPHA


def _node(node_nm: int) -> Node:
    if node_nm not in NODES:
        raise ValueError(f"node_nm = {node_nm!r}: expected one of {sorted(NODES)}")
    return NODES[node_nm]


def die_cost_usd(area_mm2: float, node_nm: int = 20) -> float:
    """Cost of one good die (USD): the wafer's price over its good dies."""
    return _node(node_nm).wafer_usd / (dies_per_wafer(area_mm2) * die_yield(area_mm2, node_nm))


def chip_cost_usd(area_mm2: float, dram_kind: str | None = None, dram_bytes: float = 0.0,
                  node_nm: int = 20) -> float:
    """A packaged chip (USD): its die, its package, and ``dram_bytes`` of ``dram_kind`` (none if None).

    Raises:
        ValueError: as `die_cost_usd`; an unknown DRAM kind."""
    cost = die_cost_usd(area_mm2, node_nm) + PACKAGE_USD
    if dram_kind is not None:
        if dram_kind not in DRAM_USD_PER_GB:
            raise ValueError(f"dram_kind = {dram_kind!r}: expected one of {sorted(DRAM_USD_PER_GB)}")
        cost += DRAM_USD_PER_GB[dram_kind] * dram_bytes / 1e9
    return cost
