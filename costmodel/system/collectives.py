"""The time and traffic of the collectives a split step needs, on an `Interconnect`.

The alpha-beta model of ring and pairwise algorithms (Thakur, Rabenseifner and Gropp, "Optimization
of Collective Communication Operations in MPICH", IJHPCA 2005, Sec. 4), what NCCL runs on NVLink
rings and what GenZ and LLMCompass cost: ``p`` chips, ``S`` bytes per chip, ``B`` bytes/s one chip
sends in one direction (`Interconnect.bytes_per_s`), ``a`` the latency per hop (s):

==============  ===================================  ===============================================
collective      time                                 bytes each chip sends
==============  ===================================  ===============================================
all_reduce      2 (p - 1) a + 2 (p - 1) / p x S / B  2 (p - 1) / p x S  (ring: reduce-scatter, then
                                                     all-gather, each p - 1 steps of S / p)
reduce_scatter  (p - 1) a + (p - 1) / p x S / B      (p - 1) / p x S
all_gather      (p - 1) a + (p - 1) / p x S / B      (p - 1) / p x S   (S: the gathered size)
all_to_all      switch: (p - 1) a + (p - 1) / p x    (p - 1) / p x S   (S: what a chip holds for all
                S / B; ring: (p / 2) a + p S / (4 B)                    chips, a 1 / p share to each)
send_recv       a + S / B                            S
==============  ===================================  ===============================================

On a ``torus2d`` (the p chips as an a x b grid, a the largest divisor of p up to sqrt(p); half of
each chip's links, B / 2, along each dimension) the collectives run dimension by dimension (the
two-dimensional algorithms of Thakur et al., Sec. 4, as on a TPU's torus): an all-reduce is a
reduce-scatter along the rows (a chips), an all-reduce of the S / a shards along the columns (b
chips), an all-gather along the rows: 2 (a - 1) a + 2 (b - 1) a hops of latency and
(2 (a - 1) / a + 2 (b - 1) / (a b)) S / (B / 2); a reduce-scatter or an all-gather half of that; an
all-to-all a ring all-to-all along each dimension in turn. A grid of one row is a ring (all links).

On a ``switch`` every chip reaches every other at full bandwidth: a logical ring gets B per chip.
On a physical ``ring`` a bidirectional ring algorithm (half the data each way, half the links each
way) takes the same time as on a switch; an all-to-all does not: a share travels min(d, p - d) hops
to the chip d away, p^2 / 4 shares-hops per chip for even p, over p x B of link capacity. ``p`` = 1:
nothing moves, time 0. Every collective among several chips but send_recv also pays the
interconnect's fixed start-up (`Interconnect.collective_us`, 0 unless stated). Energy: every byte sent crosses one link per hop, x 8 x ``pj_per_bit``
(None when the interconnect states none).

On a ``fully_connected`` domain (one link to each other chip) a collective among p chips has the
links to its p - 1 peers: B = min(links, p - 1) x GB/s per link.

That is ``model = "alpha_beta"``. An interconnect with ``model = "nccl"`` is costed as NCCL picks and
runs the collective (`costmodel.system.nccl`: its tuning model's ring / tree and LL / LL128 / Simple of
least predicted time, run on the channels its runtime gives the size); the result names the algorithm
and protocol and NCCL's own prediction.

The domain: a collective over more chips than `Interconnect.domain` leaves it (`domain_crossing`):
the NCCL model then runs it hierarchically as NCCL does (nodes of ``domain`` GPUs joined by the
``scale_out`` network: its ring crosses the network between nodes, its tree is a chain inside each
node and a double binary tree across; a PCIe ``scale_out`` stays one node with every ring step at
PCIe's bandwidth and latency class). The alpha-beta model costs it on the interconnect's own links, as
if the domain extended. Either way the result carries the warning (`CollectiveCost.warnings`,
``crosses_domain``); without a ``scale_out`` the NCCL model too costs it as if the domain extended.

Errors: ValueError for an unknown collective, a chip count < 1 or negative bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .interconnect import Interconnect
from .nccl import nccl_collective

__all__ = ["COLLECTIVES", "CollectiveCost", "collective_cost", "domain_crossing"]

#: The collectives `collective_cost` knows.
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv")


@dataclass(frozen=True)
class CollectiveCost:
    """One collective: ``time_s`` (s), ``sent_bytes`` (bytes each chip sends), ``link_bytes``
    (bytes x hops over every link of the system), ``energy_pj`` (pJ, None when not counted);
    ``algorithm`` (``alpha_beta``, or NCCL's ``ring`` / ``tree`` / ``p2p``), ``protocol`` (NCCL's
    ``LL`` / ``LL128`` / ``Simple``, "" for alpha-beta), ``predicted_s`` (NCCL's own predicted time, s;
    None for alpha-beta), ``crosses_domain`` and ``warnings`` (`domain_crossing`)."""

    collective: str
    chips: int
    bytes: float
    time_s: float
    sent_bytes: float
    link_bytes: float
    energy_pj: float | None
    algorithm: str = "alpha_beta"
    protocol: str = ""
    predicted_s: float | None = None
    crosses_domain: bool = False
    warnings: tuple[str, ...] = ()


def domain_crossing(net: Interconnect, chips: int, what: str = "chips") -> str | None:
    """The warning when a collective among ``chips`` chips leaves ``net``'s domain, else None:
    ``"tp = 16 exceeds the nvlink3 domain of 8 GPUs: 8 GPUs per node, the rest over ib_hdr (25 GB/s
    per GPU)"`` (``what`` names the count; the scale-out's GB/s per GPU per direction, its links x GB/s
    per link).

    Raises:
        ValueError: ``net.scale_out`` names no bundled interconnect.
    """
    from .interconnect import interconnect

    d = net.domain
    if d is None or chips <= d or net.link == "net":
        return None
    head = f"{what} = {chips} exceeds the {net.name} domain of {d} GPU{'s' if d > 1 else ''}"
    if net.scale_out is None:
        return f"{head}: no scale-out interconnect stated, costed as if the domain extended"
    so = interconnect(net.scale_out)
    group = "node" if so.link == "net" else "group"
    return f"{head}: {d} GPUs per {group}, the rest over {so.name} ({so.bytes_per_s / 1e9:g} GB/s per GPU)"


def collective_cost(collective: str, nbytes: float, chips: int, net: Interconnect) -> CollectiveCost:
    """The cost of ``collective`` of ``nbytes`` bytes per chip among ``chips`` chips on ``net``
    (module docstring's table).

    Raises:
        ValueError: ``collective`` not in `COLLECTIVES`, ``chips`` < 1, ``nbytes`` < 0.
    """
    if collective not in COLLECTIVES:
        raise ValueError(f"collective = {collective!r}: expected one of {list(COLLECTIVES)}")
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 1:
        raise ValueError(f"chips = {chips!r}: expected a positive integer")
    if not nbytes >= 0:
        raise ValueError(f"bytes = {nbytes!r}: expected a number >= 0")
    p, s = chips, float(nbytes)
    if p == 1 and collective != "send_recv":
        return CollectiveCost(collective, p, s, 0.0, 0.0, 0.0, None if net.pj_per_bit is None else 0.0)
    warn = domain_crossing(net, p)
    c = _nccl(collective, s, p, net) if net.model == "nccl" else _alpha_beta(collective, s, p, net)
    if warn is None:
        return c
    return replace(c, crosses_domain=True, warnings=(warn,))


def _sent(collective: str, s: float, p: int) -> float:
    """Bytes each chip sends (module docstring's table)."""
    if collective == "all_reduce":
        return 2 * (p - 1) / p * s
    return s if collective == "send_recv" else (p - 1) / p * s


def _nccl(collective: str, s: float, p: int, net: Interconnect) -> CollectiveCost:
    """``collective`` as NCCL runs it (`costmodel.system.nccl`)."""
    ch = nccl_collective(collective, s, p, net)
    sent = _sent(collective, s, p)
    link = sent * (p if collective != "send_recv" else 1)
    e = None if net.pj_per_bit is None else link * 8 * net.pj_per_bit
    return CollectiveCost(collective, p, s, ch.time_us * 1e-6, sent, link, e, ch.algorithm, ch.protocol,
                          ch.predicted_us * 1e-6)


def _alpha_beta(collective: str, s: float, p: int, net: Interconnect) -> CollectiveCost:
    """``collective`` by the alpha-beta formulas (module docstring)."""
    b, a = net.bytes_per_s, net.latency_us * 1e-6
    if net.topology == "fully_connected":
        b = min(net.links, p - 1) * net.gbps_per_link * 1e9
    hops = 1.0
    if net.topology == "torus2d" and collective != "send_recv" and _grid(p)[0] > 1:
        return _torus(collective, s, p, net)
    if collective == "all_reduce":
        sent = 2 * (p - 1) / p * s
        t = 2 * (p - 1) * a + sent / b
    elif collective in ("reduce_scatter", "all_gather"):
        sent = (p - 1) / p * s
        t = (p - 1) * a + sent / b
    elif collective == "all_to_all":
        sent = (p - 1) / p * s
        if net.topology == "ring":
            share_hops = sum(min(d, p - d) for d in range(1, p))   # p^2 / 4 for even p
            hops = share_hops / (p - 1)
            t = (p // 2) * a + (s / p) * share_hops / b
        else:
            t = (p - 1) * a + sent / b
    else:  # send_recv: one chip to the next
        sent = s
        t = a + s / b
    if collective != "send_recv":
        t += net.collective_us * 1e-6
    link = sent * hops * (p if collective != "send_recv" else 1)
    e = None if net.pj_per_bit is None else link * 8 * net.pj_per_bit
    return CollectiveCost(collective, p, s, t, sent, link, e)


def _grid(p: int) -> tuple[int, int]:
    """(a, b), a x b = p, a the largest divisor of p up to sqrt(p)."""
    a = max(d for d in range(1, math.isqrt(p) + 1) if p % d == 0)
    return a, p // a


def _torus(collective: str, s: float, p: int, net: Interconnect) -> CollectiveCost:
    """``collective`` on a 2D torus, dimension by dimension (module docstring)."""
    a, b = _grid(p)
    bd, lat = net.bytes_per_s / 2, net.latency_us * 1e-6
    if collective == "all_reduce":
        sent = 2 * (a - 1) / a * s + 2 * (b - 1) / b * s / a
        t = (2 * (a - 1) + 2 * (b - 1)) * lat + sent / bd
    elif collective in ("reduce_scatter", "all_gather"):
        sent = (a - 1) / a * s + (b - 1) / b * s / a
        t = ((a - 1) + (b - 1)) * lat + sent / bd
    else:  # all_to_all: a ring all-to-all of the whole S along each dimension
        hops_a = sum(min(d, a - d) for d in range(1, a))
        hops_b = sum(min(d, b - d) for d in range(1, b))
        sent = (a - 1) / a * s + (b - 1) / b * s
        t = (a // 2 + b // 2) * lat + (s / a) * hops_a / bd + (s / b) * hops_b / bd
    t += net.collective_us * 1e-6
    link = sent * p
    e = None if net.pj_per_bit is None else link * 8 * net.pj_per_bit
    return CollectiveCost(collective, p, s, t, sent, link, e)
