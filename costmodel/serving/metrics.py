"""What a served trace comes to: latency percentiles, throughput, SLO attainment, goodput, energy.

Per request (vLLM's benchmark definitions, benchmarks/benchmark_serving.py): TTFT = first token -
arrival; time per output token (TPOT) = (finish - first token) / (output - 1), for requests of more
than one output token; E2E = finish - arrival; queueing = first scheduled - arrival. Percentiles
are NumPy's linear ones (as vLLM's benchmark reports them) over the requests served (refused ones
excluded and counted).

SLO attainment: the share of all requests (refused ones count as missing it) whose TTFT and TPOT
both meet their targets (a one-token request meets TPOT). **Goodput** (DistServe, Zhong et al.,
OSDI'24, Sec. 2.2): the highest request rate whose attainment is at least a target (90% by
default), found by `goodput` by bisection over the rate.

Throughput: output tokens / s and requests / s over the span from the first arrival to the last
finish. Energy: per request (the mean of its share, `costmodel.serving.simulate`) and per output
token (all energy / all output tokens). KV-cache use: blocks used per iteration, weighted by the
iterations' durations, over the blocks there are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .simulate import SimResult

__all__ = ["SLO", "request_figures", "summary", "goodput", "PERCENTILES"]

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class SLO:
    """Service-level targets: ``ttft_s`` and ``tpot_s`` (s; None: no target), met by a share of at
    least ``attainment`` of the requests (goodput's threshold)."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    attainment: float = 0.9

    def __post_init__(self) -> None:
        for k in ("ttft_s", "tpot_s"):
            v = getattr(self, k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                                  or v <= 0):
                raise ValueError(f"slo_{k.replace('_s', '')} = {v!r}: expected seconds > 0")
        a = self.attainment
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not (0 < a <= 1):
            raise ValueError(f"slo attainment = {a!r}: expected a fraction in (0, 1]")

    @property
    def given(self) -> bool:
        return self.ttft_s is not None or self.tpot_s is not None

    def to_dict(self) -> dict[str, Any]:
        return {"ttft_s": self.ttft_s, "tpot_s": self.tpot_s, "attainment": self.attainment}


def request_figures(res: SimResult) -> dict[str, np.ndarray]:
    """Per-request ``ttft_s``, ``tpot_s`` (NaN for one output token), ``e2e_s``, ``queue_s``
    (NaN where refused)."""
    a = res.requests.arrival_s
    ttft = res.first_token_s - a
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(res.output > 1, (res.finish_s - res.first_token_s) / (res.output - 1), np.nan)
    return {"ttft_s": ttft, "tpot_s": tpot, "e2e_s": res.finish_s - a, "queue_s": res.scheduled_s - a}


def _stats(x: np.ndarray) -> dict[str, float | None]:
    x = x[np.isfinite(x)]
    if not len(x):
        return {"mean": None, **{f"p{p}": None for p in PERCENTILES}}
    return {"mean": float(x.mean()), **{f"p{p}": float(np.percentile(x, p)) for p in PERCENTILES}}


def attainment(res: SimResult, slo: SLO) -> float | None:
    """The share of requests meeting both targets (None without targets)."""
    if not slo.given:
        return None
    f = request_figures(res)
    ok = ~res.refused
    if slo.ttft_s is not None:
        ok &= f["ttft_s"] <= slo.ttft_s
    if slo.tpot_s is not None:
        ok &= np.isnan(f["tpot_s"]) | (f["tpot_s"] <= slo.tpot_s)
    return float(ok.mean()) if len(ok) else None


def summary(res: SimResult, slo: SLO | None = None) -> dict[str, Any]:
    """The figures of a served trace (module docstring), under stable keys: ``ttft_s``, ``tpot_s``,
    ``e2e_s``, ``queue_s`` (each ``mean``, ``p50``, ``p90``, ``p99``), ``output_tokens_per_s``,
    ``requests_per_s``, ``slo_attainment`` (None without an SLO), ``energy_per_request_j``,
    ``energy_per_output_token_j``, ``energy_j``, ``kv_cache_utilization``, ``preemptions``,
    ``requests``, ``served``, ``refused``, ``truncated``, ``iterations``, ``offered_rate``,
    ``span_s``, ``num_blocks``, ``mean_batch`` (sequences per iteration, weighted by time)."""
    slo = slo or SLO()
    f = request_figures(res)
    served = ~res.refused
    n_served = int(served.sum())
    a = res.requests.arrival_s
    span = float(np.nanmax(res.finish_s) - a[0]) if n_served else 0.0
    out_tokens = int(res.output[served].sum())
    it = res.stats
    e_total = float(res.energy_j.sum())
    return {
        "ttft_s": _stats(f["ttft_s"]), "tpot_s": _stats(f["tpot_s"]), "e2e_s": _stats(f["e2e_s"]),
        "queue_s": _stats(f["queue_s"]),
        "output_tokens_per_s": out_tokens / span if span > 0 else None,
        "requests_per_s": n_served / span if span > 0 else None,
        "slo_attainment": attainment(res, slo), "slo": slo.to_dict(),
        "energy_j": e_total, "energy_per_request_j": e_total / n_served if n_served else None,
        "energy_per_output_token_j": e_total / out_tokens if out_tokens else None,
        "kv_cache_utilization": it.get("kv_utilization"), "mean_batch": it.get("mean_batch"),
        "preemptions": int(res.preemptions.sum()), "requests": len(res.requests), "served": n_served,
        "refused": int(res.refused.sum()), "truncated": res.truncated, "iterations": res.n_iterations,
        "offered_rate": res.requests.rate if len(res.requests) > 1 else None, "span_s": span,
        "num_blocks": res.num_blocks,
    }


#: How far below its start the goodput search looks (hi / FLOOR) before it calls the goodput 0.
FLOOR = 1024


def goodput(serve_at: Callable[[float], SimResult], slo: SLO, hi: float, *, lo: float = 0.0,
            rel_tol: float = 0.02, max_sims: int = 24) -> dict[str, Any]:
    """DistServe's goodput: the highest rate (requests/s) whose SLO attainment is at least
    ``slo.attainment``, by bisection between a rate that meets it and one that does not.

    ``serve_at(rate)`` serves the load at that rate. The search starts at ``hi`` and doubles it
    until the SLO is missed (or halves it until met), then bisects until the bracket is within
    ``rel_tol`` of its upper end. Attainment falls with the rate for a fixed set of requests whose
    gaps scale with it (same seed): the bisection assumes so, and so a start missed is first tried at
    the lowest rate the halving would reach (hi / `FLOOR`, the requests all but alone): missed there,
    the goodput is 0 after two simulations instead of eleven.

    Returns:
        ``goodput_rps`` (the highest rate found meeting the SLO; 0 if none down to hi / `FLOOR`),
        ``bracket`` ([met, missed] rates), ``simulations`` (how many were run), ``points``
        ([{rate, attainment}], in the order run).

    Raises:
        ValueError: an SLO without targets; hi <= 0.
    """
    if not slo.given:
        raise ValueError("goodput: give an SLO (a TTFT target, a TPOT target or both)")
    if not (hi > 0 and math.isfinite(hi)):
        raise ValueError(f"goodput: start rate {hi!r}: expected > 0")
    points: list[dict[str, float]] = []

    seen: dict[float, bool] = {}

    def ok(rate: float) -> bool:
        if rate in seen:
            return seen[rate]
        att = attainment(serve_at(rate), slo)
        points.append({"rate": rate, "attainment": att if att is not None else math.nan})
        seen[rate] = att is not None and att >= slo.attainment
        return seen[rate]

    good, bad = lo, None
    r = hi
    if ok(r):
        good = r
        while len(points) < max_sims:
            r *= 2
            if ok(r):
                good = r
            else:
                bad = r
                break
    elif ok(hi / FLOOR):   # the lowest rate the halving tries: missed there, missed at every rate
        bad = r
        while len(points) < max_sims and r > hi / FLOOR:
            r /= 2
            if ok(r):
                good = r
                break
            bad = r
    else:
        bad = hi / FLOOR
    if bad is not None and good > 0:
        while len(points) < max_sims and (bad - good) > rel_tol * bad:
            mid = (good + bad) / 2
            if ok(mid):
                good = mid
            else:
                bad = mid
    return {"goodput_rps": good, "bracket": [good, bad], "simulations": len(points), "points": points}
