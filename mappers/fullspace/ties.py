"""The tie rule of the full-mapspace mappers (primitive_sa, random5, hybrid, cosa) on one candidate
mapping and its cost report (issue 38; `mappers.base.rank_key` is the same rule on unit results).

Under the latency objective many mappings tie: a compute-bound layer has as many cycles under
every mapping that keeps the array equally busy, while what those mappings move differs. A
candidate then beats the best so far (`beats`) when its latency is lower, or equal with lower
energy, or equal on both with fewer bits moved at DRAM (`dram_bits`). Under the energy and EDP
objectives only the objective counts, exactly as before the rule (their results are unchanged).

Across work units (`Mapper.reduce`, `mappers.base.best_of`) the rule stops at energy: a unit's
result carries no DRAM figure, and the report's best-of-units orders the stored rows the same way.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["dram_bits", "beats"]


def dram_bits(report: Any, arch: Any) -> float:
    """Bits moved at DRAM by a mapping: per operand whose outermost level is unbounded (no
    ``size_bits``), the word accesses (reads + writes) of that level in ``report.breakdown``
    (`costmodel.loopnest.reference.CostReport`) x its word width, summed; 0 when every operand's
    outermost level is on chip (as `costmodel.llm.dram_traffic`, without evaluating again)."""
    total = 0.0
    for op, levels in (report.breakdown or {}).get("operands", {}).items():
        top = arch.levels(op)[-1]
        if top.size_bits is None and levels:
            total += (levels[-1]["reads"] + levels[-1]["writes"]) * top.port(op).word_bits
    return total


def beats(value: float, report: Any, best_value: float, best_report: Any, objective: str, arch: Any) -> bool:
    """Whether a candidate (objective ``value``, cost ``report``) beats the best so far
    (``best_value``, ``best_report``; None if there is none yet) of a problem on ``arch``: a lower
    ``value``; under the latency objective also an equal finite latency with lower energy (pJ), or
    equal energy with fewer `dram_bits`. Equal on all of these: the best so far stays (first met)."""
    if value < best_value:
        return True
    if objective != "latency" or best_report is None or value != best_value or not math.isfinite(value):
        return False
    if report.energy_pj != best_report.energy_pj:
        return bool(report.energy_pj < best_report.energy_pj)
    return dram_bits(report, arch) < dram_bits(best_report, arch)
