"""The annealing schedules `sweep tune` tunes, as mapper parameters, and the acceptance rule both
annealers share (`log_accept_arg`): which mappers have one
(`TUNABLE_MAPPERS`: salsa, primitive_sa, both T_i = t0 * rho^i), which of their parameters a tuning
campaign may not set (`RESERVED`), and how a tuned schedule becomes a mapper's full parameters at a
fixed budget of SA proposals per (layer, seed): chains x iterations = budget (`derive_params`).
Read by the tuning campaign's validation and by the tuning objective (`sweep.tune.objective`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from mappers import get_mapper
from mappers.base import resolve_params

__all__ = ["TUNABLE_MAPPERS", "RESERVED", "derive_params", "log_accept_arg"]

#: Mappers whose schedule `sweep tune` can tune (both anneal with T_i = t0 * rho^i).
TUNABLE_MAPPERS = ("salsa", "primitive_sa")
#: Parameters a tuning campaign may not tune or fix: the seed comes from the seed lists, the
#: engine is forced to SA, lockstep only changes how chains are batched.
RESERVED = ("seed", "engine", "lockstep")


def derive_params(mapper_name: str, tuned: Mapping[str, Any], fixed: Mapping[str, Any], budget: int) -> dict[str, Any]:
    """The full, resolved parameters of one trial at ``budget`` proposals per (layer, seed).

    ``fixed`` is applied first, then ``tuned``; ``chains`` / ``iterations`` are derived so that
    chains x iterations == budget (see the module docstring); ``salsa`` gets ``engine = "sa"`` and,
    unless ``fixed`` or ``tuned`` sets it, ``descent = False``.

    Raises:
        ValueError: reserved or unknown parameters, values out of range, or a budget that the
            tuned chains / iterations do not divide.
    """
    p = {**fixed, **tuned}
    bad = sorted(set(p) & set(RESERVED))
    if bad:
        raise ValueError(f"parameters {bad} are set by the tuner, not by the campaign")
    if "chains" in p and "iterations" in p and int(p["chains"]) * int(p["iterations"]) != budget:
        raise ValueError(f"chains {p['chains']} x iterations {p['iterations']} != budget {budget}")
    if "iterations" in p:
        it = int(p["iterations"])
        if it <= 0 or budget % it:
            raise ValueError(f"iterations {it} does not divide the budget {budget}")
        p["chains"] = budget // it
    else:
        ch = int(p.get("chains", 1))
        if ch <= 0 or budget % ch:
            raise ValueError(f"chains {ch} does not divide the budget {budget}")
        p["chains"], p["iterations"] = ch, budget // ch
    if mapper_name == "salsa":
        p["engine"] = "sa"
        p.setdefault("descent", False)
    return resolve_params(get_mapper(mapper_name), p)


def log_accept_arg(v: float, vn: float, ref: float, t: float, normalise: str) -> float:
    """The bound log(u) is compared with to accept a move from cost ``v`` to ``vn`` at temperature
    ``t`` (eq. 3 with the cost normalised as ``normalise`` says; ``ref`` the reference cost of the
    "initial" / "best" normalisations). At ``t`` = 0 (T0 rho^i below the smallest float after
    thousands of iterations at a fast cooling) the limit t -> 0+: +inf (accept) when ``vn`` <= ``v``,
    else -inf (reject): a greedy descent, never a division by zero."""
    if t <= 0.0:
        return math.inf if vn <= v else -math.inf
    if normalise == "zigzag":
        return (v / vn - 1.0) / t
    if normalise == "log":
        return math.log(v / vn) / t
    return (v - vn) / (ref * t)
