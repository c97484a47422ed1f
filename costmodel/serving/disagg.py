"""Several copies of a model serving one stream of requests: colocated replicas, or a prefill pool
and a decode pool (disaggregated serving: DistServe, Zhong et al., OSDI'24; Splitwise, Patel et
al., ISCA'24), each pool its own instances, chips, split and design.

* **Colocated** (`serve_replicas`): ``instances`` copies, each prefilling and decoding its own
  requests; requests dealt to the copies in arrival order, round-robin (vLLM's and DistServe's
  simplest dispatch; no copy is told another's load).
* **Disaggregated** (`serve_disaggregated`): each request is prefilled by a prefill instance (dealt
  round-robin), which samples its first token; its K/V cache (prompt tokens x ``kv_bytes_per_token``,
  the whole model's cache) is then sent over ``link`` to a decode instance (dealt round-robin in the
  order they arrive there): ``latency + bytes / bandwidth``, after the prefill, not overlapped with
  it (Splitwise overlaps the transfer layer by layer with the prefill; DistServe sends it after:
  we follow DistServe); the decode instance admits it with its prompt cached (no recompute) and
  decodes its other output tokens. A request of one output token never reaches the decode pool.
  The link's energy is ``bytes x 8 x pJ/bit`` where the link states one.

Each instance is one `costmodel.serving.simulate` (its own scheduler and KV cache); the result
joins them: per request, the prefill's queueing and first token, the decode's finish; per
iteration, every instance's rows with ``pool`` and ``instance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .requests import Requests
from .scheduler import SchedulerConfig
from .simulate import SimResult, simulate
from .table import CostTable

__all__ = ["Pool", "Link", "serve_replicas", "serve_disaggregated"]


@dataclass(frozen=True)
class Pool:
    """Identical instances: each with this cost table, scheduler and KV blocks (one copy's)."""

    table: CostTable
    cfg: SchedulerConfig
    num_blocks: int
    instances: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.instances, bool) or not isinstance(self.instances, int) or self.instances < 1:
            raise ValueError(f"instances = {self.instances!r}: expected a whole number >= 1")


@dataclass(frozen=True)
class Link:
    """How a K/V cache travels from a prefill to a decode instance: ``bytes_per_s``, ``latency_s``,
    ``pj_per_bit`` (None: not counted), ``name``."""

    bytes_per_s: float
    latency_s: float = 0.0
    pj_per_bit: float | None = None
    name: str = ""

    @classmethod
    def of(cls, net) -> "Link":
        """From a `costmodel.system.interconnect.Interconnect` (its per-chip bandwidth and latency)."""
        return cls(net.bytes_per_s, net.latency_us * 1e-6, net.pj_per_bit, net.name)


def _subset(req: Requests, idx: np.ndarray, arrival: np.ndarray | None = None, output: np.ndarray | None = None):
    return Requests(req.arrival_s[idx] if arrival is None else arrival, req.prompt[idx],
                    req.output[idx] if output is None else output, req.source)


def _join(requests: Requests, parts: list[tuple[str, int, np.ndarray, SimResult]], n_blocks: int) -> SimResult:
    """One `SimResult` of instances' results (``parts``: pool, instance, the requests' indices, its
    result): per-request arrays put back in order, iterations concatenated with pool / instance."""
    n = len(requests)
    nan = lambda: np.full(n, np.nan)  # noqa: E731
    sched, first, fin, energy = nan(), nan(), nan(), np.zeros(n)
    pre, out = np.zeros(n, np.int64), requests.output.astype(np.int64).copy()
    refused, reason = np.zeros(n, bool), [""] * n
    iters: dict[str, list] = {}
    busy = used = seqs = 0.0
    trunc = n_it = 0
    for pool, inst, idx, r in parts:
        pre[idx] += r.preemptions
        energy[idx] += r.energy_j
        refused[idx] |= r.refused
        for k, i in enumerate(idx):
            if r.reason[k]:
                reason[i] = f"{pool}: {r.reason[k]}"
        cols = dict(r.iterations)
        cols["pool"] = np.full(len(cols["start_s"]), pool, dtype=object)
        cols["instance"] = np.full(len(cols["start_s"]), inst, dtype=np.int64)
        for name, v in cols.items():
            iters.setdefault(name, []).append(v)
        b = r.stats.get("busy_s") or 0.0
        busy += b
        used += (r.stats.get("kv_utilization") or 0.0) * b
        seqs += (r.stats.get("mean_batch") or 0.0) * b
        trunc += r.truncated
        n_it += r.n_iterations
    joined = {k: np.concatenate(v) for k, v in iters.items()}
    res = SimResult(requests, sched, first, fin, pre, energy, np.where(refused, 0, out), refused, reason, joined, n_it,
                    trunc, n_blocks, 0.0, {"busy_s": busy, "kv_utilization": used / busy if busy else None,
                                           "mean_batch": seqs / busy if busy else None})
    return res


def serve_replicas(requests: Requests, pool: Pool) -> SimResult:
    """``pool.instances`` colocated copies, requests dealt round-robin (module docstring)."""
    n = len(requests)
    parts = []
    for i in range(pool.instances):
        idx = np.arange(i, n, pool.instances)
        if len(idx):
            parts.append(("colocated", i, idx, simulate(_subset(requests, idx), pool.table, pool.cfg, pool.num_blocks)))
    res = _join(requests, parts, pool.num_blocks * pool.instances)
    for _, _, idx, r in parts:
        res.scheduled_s[idx], res.first_token_s[idx], res.finish_s[idx] = r.scheduled_s, r.first_token_s, r.finish_s
        res.output[idx] = r.output
    res.end_s = max(r.end_s for *_, r in parts)
    return res


def serve_disaggregated(requests: Requests, prefill: Pool, decode: Pool, link: Link,
                        kv_bytes_per_token: float) -> SimResult:
    """Prefill pool, K/V transfer, decode pool (module docstring).

    Args:
        requests: the stream.
        prefill, decode: the two pools.
        link: the K/V cache's path between them.
        kv_bytes_per_token: bytes of one token's K and V over the whole model (every block, every
            K/V head).

    Returns:
        A `SimResult`; ``stats`` adds ``transfer_s`` (mean per request) and ``transfer_j`` (all).
    """
    n = len(requests)
    parts = []
    first = np.full(n, np.nan)
    sched = np.full(n, np.nan)
    for i in range(prefill.instances):
        idx = np.arange(i, n, prefill.instances)
        if not len(idx):
            continue
        r = simulate(_subset(requests, idx, output=np.ones(len(idx), np.int64)), prefill.table, prefill.cfg,
                     prefill.num_blocks)
        parts.append(("prefill", i, idx, r))
        first[idx], sched[idx] = r.first_token_s, r.scheduled_s
    nbytes = requests.prompt * float(kv_bytes_per_token)
    transfer = link.latency_s + nbytes / link.bytes_per_s
    go = np.flatnonzero(np.isfinite(first) & (requests.output > 1))
    at = first[go] + transfer[go]
    order = go[np.argsort(at, kind="stable")]
    finish = np.where(np.isfinite(first) & (requests.output <= 1), first, np.nan)
    for i in range(decode.instances):
        idx = order[i::decode.instances]
        if not len(idx):
            continue
        sub = _subset(requests, idx, arrival=first[idx] + transfer[idx])
        r = simulate(sub, decode.table, decode.cfg, decode.num_blocks, prefilled=np.ones(len(idx), bool))
        parts.append(("decode", i, idx, r))
        finish[idx] = r.finish_s
    res = _join(requests, parts, prefill.num_blocks * prefill.instances + decode.num_blocks * decode.instances)
    for pool, _, idx, r in parts:
        if pool == "decode":
            res.output[idx] = r.output
    res.scheduled_s[:], res.first_token_s[:], res.finish_s[:] = sched, first, finish
    e_link = 0.0 if link.pj_per_bit is None else float(nbytes[go].sum()) * 8 * link.pj_per_bit * 1e-12
    if len(go):
        res.energy_j[go] += nbytes[go] * 8 * (link.pj_per_bit or 0.0) * 1e-12
    res.stats.update(transfer_s=float(transfer[go].mean()) if len(go) else 0.0, transfer_j=e_link)
    res.end_s = float(np.nanmax(finish)) if np.isfinite(finish).any() else 0.0
    return res
