"""How NCCL picks and runs a collective: its own tuning model, written from its source.

The constants are NCCL's (`costmodel.system.nccl_tables`, NVIDIA/nccl commit 5067397c, NCCL 2.30.7);
the code is ours. Four steps:

1. **Layout** (`layout`): how NCCL sees the ranks. ``nodes`` (one unless the collective leaves the
   interconnect's domain for a network), the link class of the steps inside a node (``nvlink``, or
   ``pci`` when any step of the ring crosses PCIe), and the ring graph NCCL's search finds: ``channels``
   x ``bw_channel`` GB/s, from the GPU's bandwidth B towards its peers (links x NCCL's per-link figure:
   A100 12 x 20 = 240 GB/s) by the search's rule: the fastest speed s of the generation's list with
   s <= B, then slower speeds while they are at least 0.49 s, keeping the largest channels x speed
   (channels = floor(B / s), at most 32), stopping at a perfect fit; then the duplication (s >= 25:
   twice the channels at half the speed, except on SM90+ below 50 GB/s with more than 4 channels).
   A100 NVSwitch: 40 x 6 = 240, duplicated to 12 x 20. Across nodes the speed is the fastest of the
   network list not above the GPU's NIC (HDR 25 GB/s -> 24), the channels one per NIC's worth
   (floor(NIC / s) per GPU, x GPUs per node, within floor(B / s)). The tree graph is taken equal to the
   ring's (NCCL searches it with the ring's channel count; on the bundled systems it finds the same
   speed). The runtime's channels: twice the searched (connect.cc), twice again on SM90+ across nodes
   above 45 GB/s per channel when fewer than 16.
2. **Bandwidth and latency per algorithm and protocol** (`predict`, tuning.cc ``ncclTopoTuneModel``):
   bus bandwidth channels x bw_channel; ring LL min(llMax, 0.5 x), ring LL128 min(0.92 x, channels x
   per-channel cap), tree (all-reduce) min(0.92 x, channels x tree cap), then tree LL min(/ 3.8, llMax),
   tree LL128 min(x 7/9 in one node or x 120/128, channels x cap); algorithm bandwidth = bus x ranks /
   steps (ring: 2 (p - 1) steps for an all-reduce, p - 1 for reduce-scatter / all-gather), x 0.5 for the
   tree. Latency: base + (steps - inter steps) x max(intra, network overhead) + inter steps x network
   latency for the ring (inter steps 2 (nodes - 1) for an all-reduce, nodes - 1 otherwise; the network
   overhead 1 or 2 us by host vendor, x 3 for Simple; with one GPU per node the tree's network
   latency); for the tree base + 2 ((p / nodes - 1) x intra + log2(nodes) x network).
3. **Choice** (enqueue.cc ``topoGetAlgoInfo``, tuning.cc ``ncclTopoGetAlgoTime``): predicted time =
   latency + bytes / (1000 x GB/s) us, the tree's bandwidth x its correction for 64 B x 2^k, a
   multi-node ring Simple all-reduce's latency x 1.4 once each rank's channel share reaches 64 bytes;
   NCCL runs the enabled pair of least predicted time (LL128 only where every step is NVLink).
4. **Run** (enqueue.cc): the chosen pair runs on the channels that keep bytes >= channels x threads x
   threshold, and gets that share of the bandwidth: ``time = latency + bytes / (GB/s x used / all)``.
   NCCL's own prediction assumes every channel; the difference is what a small message pays.

All-to-all and send/receive are NCCL's point-to-point operations, which its tuning model does not
cost; from the same constants: one ring step's base and hardware latency of its protocol (LL up to
``NCCL_P2P_LL_THRESHOLD`` = 16 KiB per peer, else Simple), the bytes at the path's bandwidth (LL: half):
send/receive over one peer's path, all-to-all each GPU's shares to the others at once, the ones inside
the node over NVLink, the rest over its NIC, whichever takes longer.

Not modelled: NVLS / NVLS-tree (NVLink SHARP on H100 / B200 NVSwitch systems, chosen by NCCL >= 2.17
for large all-reduces in one node: ours are the ring's, so large H100 / B200 all-reduces are
pessimistic), CollNet, PAT (reduce-scatter / all-gather with one GPU per node), the thread-count halving
on one channel, the tree pattern's 0.85, NCCL's "aggregation" of several collectives in one launch.

Errors: ValueError for an unknown collective or a count < 1 (`costmodel.system.collectives` checks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .nccl_tables import GPUS, LL_MAX_HOST, NET_OVERHEAD_US, PROTOCOLS, TREE_CORRECTION, GpuTables

__all__ = ["Layout", "Choice", "layout", "predict", "nccl_collective", "MAX_RING_CHANNELS"]

#: The ring search's channel limit (init.cc: MAXCHANNELS / 2) and the runtime's (MAXCHANNELS).
MAX_RING_CHANNELS, MAX_CHANNELS = 32, 64
_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}      # device.h NCCL_*_MAX_NTHREADS
_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}          # comm.h NCCL_*_THREAD_THRESHOLD
_PCI_BW = 12.0                                            # topo.h PCI_BW (GB/s)
_P2P_LL_BYTES = 16384                                     # enqueue.cc NCCL_P2P_LL_THRESHOLD


@dataclass(frozen=True)
class Layout:
    """How NCCL sees ``ranks`` GPUs (module docstring, step 1).

    Attributes:
        ranks: GPUs in the collective.
        nodes: nodes (NCCL's nNodes: 1 unless a network joins them).
        gpu: the generation's constants.
        intra: link class of the steps inside a node, ``nvlink`` or ``pci``.
        channels: channels of the searched ring graph.
        bw_channel: GB/s per searched channel.
        runtime_channels: channels the communicator runs (connect.cc).
        ll128: whether LL128 is enabled.
        host: host CPU vendor (``intel``, ``amd``, ``arm``).
        gpu_gbps: the GPU's bandwidth towards its node peers, NCCL's figure (GB/s).
        nic_gbps: the GPU's NIC bandwidth, NCCL's figure (GB/s; 0 in one node).
    """

    ranks: int
    nodes: int
    gpu: GpuTables
    intra: str
    channels: int
    bw_channel: float
    runtime_channels: int
    ll128: bool
    host: str = "intel"
    gpu_gbps: float = 0.0
    nic_gbps: float = 0.0

    @property
    def ppn(self) -> float:
        """Ranks per node (NCCL's float ``nRanks / nNodes``)."""
        return self.ranks / self.nodes


@dataclass(frozen=True)
class Choice:
    """One algorithm and protocol of a collective (us, GB/s).

    Attributes:
        algorithm: ``ring`` or ``tree`` (``p2p`` for all-to-all and send/receive).
        protocol: ``LL``, ``LL128`` or ``Simple``.
        latency_us: NCCL's latency term (us).
        algbw_gbps: NCCL's algorithm bandwidth (GB/s, 1e9 bytes/s), the tree's correction applied.
        predicted_us: NCCL's predicted time (us), every channel counted.
        channels: channels it runs on; of `Layout.runtime_channels`.
        time_us: the time it takes on those channels (us; module docstring, step 4).
    """

    algorithm: str
    protocol: str
    latency_us: float
    algbw_gbps: float
    predicted_us: float
    channels: int
    time_us: float


def _search(total: float, speeds: tuple[float, ...], compcap: int) -> tuple[int, float]:
    """(channels, GB/s per channel) of the ring search for a per-GPU budget ``total`` GB/s, after the
    duplication (module docstring, step 1)."""
    i = next((k for k, s in enumerate(speeds) if s <= total + 1e-9), len(speeds) - 1)
    s0, best = speeds[i], (0, speeds[i])
    for s in speeds[i:]:
        if s < 0.49 * s0 and best[0]:
            break
        n = min(MAX_RING_CHANNELS, int(total / s + 1e-9))
        if n * s > best[0] * best[1] + 1e-9:
            best = (n, s)
        if n * s >= total - 1e-9:
            break
    n, s = best if best[0] else (1, total)
    return _duplicate(n, s, compcap)


def _duplicate(n: int, s: float, compcap: int) -> tuple[int, float]:
    """search.cc ``ncclTopoDupChannels``."""
    if s < 25.0 or (compcap > 80 and s < 50.0 and n > 4):
        return n, s
    n2 = min(2 * n, MAX_RING_CHANNELS)
    return n2, s / math.ceil(n2 / n)


def _gpu_gbps(net, k: int) -> float:
    """A GPU's NCCL bandwidth towards ``k - 1`` peers of its domain (GB/s): all its links through a
    switch or round a ring; on a fully connected domain only the links to those peers."""
    links = min(net.links, k - 1) if net.topology == "fully_connected" else net.links
    return max(links, 1) * net.nccl_link_gbps


def layout(net, ranks: int, ranks_per_node: int | None = None) -> Layout:
    """How NCCL sees ``ranks`` GPUs on ``net`` (module docstring, step 1); ``ranks_per_node``: GPUs
    per node when they leave the domain (default: the domain's size, `Interconnect.domain`).

    Raises:
        ValueError: ``net.scale_out`` names no bundled interconnect.
    """
    from .interconnect import interconnect

    gpu, host = GPUS[net.gpu_arch], net.host_cpu
    if net.link == "net":                     # a network alone: one GPU per node
        d, so = ranks_per_node or 1, net
    else:
        d = ranks_per_node or net.domain or ranks
        so = interconnect(net.scale_out) if (ranks > d and net.scale_out) else None
    if so is None or so.link != "net":
        k = ranks if so is None else d
        total = _gpu_gbps(net, min(k, ranks))
        intra = "pci" if "pci" in (net.link, getattr(so, "link", "")) else "nvlink"
        if so is not None:
            total = min(total, so.links * so.nccl_link_gbps)
        n, s = _search(total, gpu.speeds_intra, gpu.compcap)
        return Layout(ranks, 1, gpu, intra, n, s, min(MAX_CHANNELS, 2 * n), gpu.ll128 and intra == "nvlink",
                      host, total)
    nodes = math.ceil(ranks / d)
    ppn = ranks / nodes
    intra = "pci" if net.link == "pci" else "nvlink"
    nic = so.links * so.nccl_link_gbps
    total = nic if net.link == "net" else _gpu_gbps(net, max(2, math.ceil(ppn)))
    s = next((v for v in gpu.speeds_inter if v <= min(nic, total) + 1e-9), gpu.speeds_inter[-1])
    n = max(1, min(MAX_RING_CHANNELS, int(ppn) * max(1, int(nic / s + 1e-9)), int(total / s + 1e-9)))
    n, s = _duplicate(n, s, gpu.compcap)
    rt = min(MAX_CHANNELS, 2 * n)
    if gpu.compcap >= 90 and s > 45.0 and rt < 16:
        rt = min(MAX_CHANNELS, 2 * rt)
    return Layout(ranks, nodes, gpu, intra, n, s, rt, gpu.ll128 and intra == "nvlink", host, total, nic)


def _bus_gbps(coll: str, algo: str, proto: str, lay: Layout) -> float:
    """NCCL's bus bandwidth of one algorithm and protocol (GB/s), 0 when it does not run."""
    g, n, nodes = lay.gpu, lay.channels, lay.nodes
    i2 = min(nodes, 3) - 1
    ll_max = g.ll_max if nodes == 1 else LL_MAX_HOST[lay.host][i2 - 1]
    bus = n * lay.bw_channel
    if proto == "LL128" and not lay.ll128:
        return 0.0
    if algo == "ring":
        if proto == "LL":
            return min(ll_max, 0.5 * bus)
        return min(0.92 * bus, n * g.ring_ll128[i2]) if proto == "LL128" else bus
    if coll != "all_reduce" or (proto == "Simple" and nodes == 1 and not g.tree_simple_one_node):
        return 0.0
    bus = min(0.92 * bus, n * g.tree[i2])
    if proto == "LL":
        return min(bus / 3.8, ll_max)
    if proto == "LL128":
        return min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), n * g.tree_ll128[i2])
    return bus


def _latency_us(coll: str, algo: str, proto: str, lay: Layout) -> float:
    """NCCL's latency of one algorithm and protocol (us; module docstring, step 2)."""
    g, p, nodes, k = lay.gpu, lay.ranks, lay.nodes, PROTOCOLS.index(proto)
    steps = 2 * (p - 1) if coll == "all_reduce" else p - 1
    intra = g.hw[lay.intra][algo][k]
    inter = g.hw["net"]["tree" if lay.ppn == 1 else algo][k]
    lat = g.base[algo][k]
    if algo == "ring":
        if nodes > 1:
            intra = max(intra, NET_OVERHEAD_US[lay.host] * (3 if proto == "Simple" else 1))
        inter_steps = 0 if nodes == 1 else (2 * (nodes - 1) if coll == "all_reduce" else nodes - 1)
        return lat + (steps - inter_steps) * intra + inter_steps * inter
    return lat + 2 * ((p // nodes - 1) * intra + int(math.log2(nodes)) * inter)


def _runtime_channels(nbytes: float, algo: str, proto: str, lay: Layout) -> int:
    """Channels a collective of ``nbytes`` runs on (enqueue.cc ``topoGetAlgoInfo``)."""
    threads = _THREADS[proto]
    if algo == "ring" and proto == "Simple" and lay.channels * lay.bw_channel <= _PCI_BW:
        threads = 256
    threshold = _THRESHOLD[proto] * (lay.ranks if (algo == "ring" and proto == "LL") else 1)
    nc = lay.runtime_channels
    while nc >= 2 and nbytes < nc * threads * threshold:
        nc -= 1
    return nc


def predict(coll: str, nbytes: float, lay: Layout) -> list[Choice]:
    """Every enabled algorithm and protocol of ``coll`` (``all_reduce``, ``reduce_scatter``,
    ``all_gather``) of ``nbytes`` bytes (NCCL's count: the all-reduce's buffer, the gathered size of
    the others) on ``lay``, NCCL's predicted time and ours (module docstring, steps 2-4), least
    predicted first."""
    out = []
    for algo in ("tree", "ring"):
        for k, proto in enumerate(PROTOCOLS):
            bus = _bus_gbps(coll, algo, proto, lay)
            if bus <= 0:
                continue
            steps = 2 * (lay.ranks - 1) if coll == "all_reduce" else lay.ranks - 1
            bw = bus * (lay.ranks / steps if algo == "ring" else 0.5)
            log = int(math.log2(nbytes // 64)) if nbytes >= 64 else -1
            if algo == "tree" and 0 <= log < 23:
                bw *= TREE_CORRECTION[k][log]
            lat = _latency_us(coll, algo, proto, lay)
            if (algo == "ring" and proto == "Simple" and lay.nodes > 1 and coll == "all_reduce"
                    and nbytes / (lay.runtime_channels * lay.ranks) >= 64):
                lat *= 1.4 if lay.gpu.compcap >= 80 else 1.9
            nc = _runtime_channels(nbytes, algo, proto, lay)
            pred = lat + nbytes / (1000.0 * bw)
            run = lat + nbytes / (1000.0 * bw * nc / lay.runtime_channels)
            out.append(Choice(algo, proto, lat, bw, pred, nc, run))
    out.sort(key=lambda c: c.predicted_us)
    return out


def _p2p(nbytes_peer: float, peers_in: int, peers_out: int, lay: Layout, net) -> Choice:
    """All-to-all / send-receive of ``nbytes_peer`` to each of ``peers_in`` peers in the node and
    ``peers_out`` beyond it (module docstring)."""
    g = lay.gpu
    proto = "LL" if nbytes_peer <= _P2P_LL_BYTES else "Simple"
    k, eff = PROTOCOLS.index(proto), (0.5 if proto == "LL" else 1.0)
    lat = g.base["ring"][k] + g.hw["net" if peers_out else lay.intra]["ring"][k]
    if net.topology == "fully_connected":
        gbps = min(net.links, max(peers_in, 1)) * net.nccl_link_gbps
    else:
        gbps = lay.gpu_gbps
    t_in = peers_in * nbytes_peer / (1000.0 * gbps * eff)
    t_out = peers_out * nbytes_peer / (1000.0 * lay.nic_gbps * eff) if peers_out else 0.0
    t = lat + max(t_in, t_out)
    return Choice("p2p", proto, lat, 0.0, t, lay.runtime_channels, t)


def nccl_collective(coll: str, nbytes: float, ranks: int, net, ranks_per_node: int | None = None) -> Choice:
    """NCCL's choice for ``coll`` of ``nbytes`` bytes per rank among ``ranks`` GPUs on ``net`` and the
    time it takes (module docstring). ``nbytes`` as `costmodel.system.collectives` counts it: the
    all-reduce's buffer, the gathered size of an all-gather, a reduce-scatter's input, what a rank holds
    for all ranks in an all-to-all, what a send moves.

    Raises:
        ValueError: ``net.scale_out`` names no bundled interconnect.
    """
    lay = layout(net, ranks, ranks_per_node)
    if coll in ("all_reduce", "reduce_scatter", "all_gather"):
        return predict(coll, float(nbytes), lay)[0]
    if coll == "send_recv":
        out = 1 if lay.nodes > 1 else 0
        return _p2p(float(nbytes), 1 - out, out, lay, net)
    ppn = round(lay.ppn)
    return _p2p(float(nbytes) / ranks, ppn - 1, ranks - ppn, lay, net)
