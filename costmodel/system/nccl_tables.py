"""The constants of NCCL's tuning model, per GPU architecture, as data with their sources.

Every figure below is read from NVIDIA's NCCL source at commit
5067397c2676d5aed50042fc39e5c8ee96eb0027 (github.com/NVIDIA/nccl, master of 2026-06-11, NCCL 2.30.7),
except the CDNA3 entry, read from AMD's RCCL (github.com/ROCm/rccl, commit
0cbce2a7571c907554199fad7e905f16ec0a565c, 2024-10-24). Files:

* ``src/graph/tuning.cc``: the base latency of each algorithm and protocol (us), the hardware latency
  per step by link class (NVLink, PCI, network; us), the LL bandwidth caps ``llMaxBws`` (GB/s, by GPU
  generation for one node and by host CPU vendor for several), the per-channel caps
  ``perChMaxRingLL128Bws``, ``perChMaxTreeLL128Bws``, ``perChMaxTreeBws`` (GB/s, by generation and node
  count: 1, 2, more), the protocol factors (LL 0.5: half of each 8-byte word is a flag; LL128 0.92,
  the 120 data bytes of a 128-byte line; tree LL 1 / 3.8, tree LL128 7 / 9 in one node), the tree's
  0.92 and its per-size correction ``treeCorrectionFactor``, the network post overhead
  ``getNetOverhead`` (1 us on Intel hosts, 2 us on AMD; x 3 for Simple), the multi-node ring
  "plateau" factor (1.4 on SM80 and later).
* ``src/graph/topo.h``: the bandwidth NCCL assigns one NVLink (``SM80_NVLINK_BW`` 20.0, ``SM90`` 20.6,
  ``SM100`` 40.1 GB/s), ``PCI_BW`` 12 (Gen3 x16); ``src/graph/topo.cc``: a PCIe link is
  lanes x per-lane rate / 80 (16 GT/s -> 120, 32 GT/s -> 240; Gen4 x16 = 24 GB/s, Gen5 x16 = 48), a NIC
  its Mb/s / 8000 (HDR 200 Gb/s = 25 GB/s).
* ``src/graph/search.cc``: the per-channel speeds the ring search tries (``speedArrayIntra`` /
  ``Inter``, ``sm90SpeedArray*``, ``sm100SpeedArray*``) and the channel duplication of
  ``ncclTopoDupChannels`` (bandwidth >= 25 GB/s per channel: twice the channels at half the speed,
  except on SM90+ below 50 GB/s with more than 4 channels).
* ``src/graph/connect.cc``: the runtime doubles the searched channels (``nChannels * 2``, at most
  ``MAXCHANNELS`` = 64, ``src/include/device.h``), and doubles them again on SM90+ across nodes
  when a channel carries more than 45 GB/s and fewer than 16 exist.
* ``src/enqueue.cc`` (``topoGetAlgoInfo``): a collective of ``n`` bytes runs on as many channels as
  keep ``n >= channels x threads x threshold`` (threads: LL 512, LL128 640, Simple 512 or 256 below
  PCI_BW, ``src/include/device.h``; thresholds ``src/include/comm.h``: LL 8 (x ranks for the ring),
  LL128 8, Simple 64); p2p sends up to ``NCCL_P2P_LL_THRESHOLD`` = 16,384 bytes use LL.

RCCL (CDNA3, MI300X) keeps NCCL's formulas with its own base latencies (12, 12, 17 us for LL, LL128,
Simple, ring and tree) and hardware latencies (``tuning_model_0``: xGMI counted as NVLink, ring 0.8 /
2.2 / 3.6 us, tree 0.8 / 1.4 / 2.5; PCI 2.2 / 2.2 / 5.7; network ring 9.5 / 19.8 / 15.1, tree 11.8 / 18.2 /
20.8), disables LL128 except on gfx90a and tree / Simple in one gfx94x node. Left out of the CDNA3
entry: RCCL's per-size ``ringCorrectionFactor`` / ``bwRatio`` tables (indexed by a topology model this
repository does not read) and its xGMI bandwidth per link (from its topology files: the whitepaper's
64 GB/s is used); the NVIDIA caps stand in for RCCL's (an assumption, written in `GPUS`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROTOCOLS", "ALGORITHMS", "GpuTables", "GPUS", "NET_OVERHEAD_US", "LL_MAX_HOST",
           "TREE_CORRECTION", "NVLINK_GBPS", "pcie_gbps", "nic_gbps"]

#: NCCL's protocols, in its order (LL, LL128, Simple).
PROTOCOLS = ("LL", "LL128", "Simple")
#: The algorithms modelled (NCCL also has CollNet, NVLS, NVLS-tree and PAT: not modelled).
ALGORITHMS = ("tree", "ring")

_T = tuple[float, float, float]

#: NCCL's base latency (us) per algorithm, (LL, LL128, Simple): tuning.cc ``baseLatencies``.
_BASE_NVIDIA = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
#: Hardware latency per step (us) by link class, per algorithm, (LL, LL128, Simple): ``hwLatencies``.
_HW_NVIDIA = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)},
}
_BASE_RCCL = {"tree": (12.0, 12.0, 17.0), "ring": (12.0, 12.0, 17.0)}
_HW_RCCL = {
    "nvlink": {"tree": (0.8, 1.4, 2.5), "ring": (0.8, 2.2, 3.6)},
    "pci": {"tree": (2.2, 2.2, 5.7), "ring": (2.2, 2.2, 5.7)},
    "net": {"tree": (11.8, 18.2, 20.8), "ring": (9.5, 19.8, 15.1)},
}

#: The per-channel speeds (GB/s) the ring search tries, one node / several (search.cc).
_SPEEDS = {
    80: ((40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
         (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12)),
    90: ((60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
         (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)),
    100: ((90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
          (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4,
           1.2, 0.24, 0.12)),
}

#: NCCL's bandwidth of one NVLink (GB/s per direction) by generation (topo.h ``SM*_NVLINK_BW``).
NVLINK_GBPS = {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}


@dataclass(frozen=True)
class GpuTables:
    """NCCL's constants for one GPU generation (module docstring; GB/s, us).

    Attributes:
        name: the generation (``ampere``, ...).
        compcap: the compute capability NCCL's rules test (80, 90, 100).
        speeds_intra, speeds_inter: the ring search's per-channel speeds, one node / several (GB/s).
        ll_max: ``llMaxBws`` for one node of this generation (GB/s; across nodes the host's row,
            `LL_MAX_HOST`, applies).
        ring_ll128, tree_ll128, tree: the per-channel caps by node count (1, 2, more) (GB/s).
        base, hw: base latency per algorithm and hardware latency per link class (us), each (LL, LL128,
            Simple).
        ll128: whether LL128 may run (NVIDIA: over NVLink paths; RCCL: not on gfx94x).
        tree_simple_one_node: whether the tree runs Simple inside one node (not on RCCL gfx94x).
        source: where the entry comes from.
    """

    name: str
    compcap: int
    speeds_intra: tuple[float, ...]
    speeds_inter: tuple[float, ...]
    ll_max: float
    ring_ll128: _T
    tree_ll128: _T
    tree: _T
    base: dict[str, _T]
    hw: dict[str, dict[str, _T]]
    ll128: bool = True
    tree_simple_one_node: bool = True
    source: str = "NCCL 2.30.7 src/graph/tuning.cc, search.cc, topo.h (commit 5067397c)"


#: The bundled generations.
GPUS: dict[str, GpuTables] = {
    "volta": GpuTables("volta", 70, *_SPEEDS[80], 39.0, (20.0, 20.0, 20.0), (20.0, 20.0, 20.0),
                       (26.5, 18.5, 10.0), _BASE_NVIDIA, _HW_NVIDIA),
    "ampere": GpuTables("ampere", 80, *_SPEEDS[80], 87.7, (20.0, 20.0, 20.0), (20.0, 20.0, 20.0),
                        (24.0, 23.6, 17.8), _BASE_NVIDIA, _HW_NVIDIA),
    "hopper": GpuTables("hopper", 90, *_SPEEDS[90], 141.0, (36.7, 36.7, 36.7), (36.7, 36.7, 29.0),
                        (38.7, 41.4, 36.0), _BASE_NVIDIA, _HW_NVIDIA),
    "blackwell": GpuTables("blackwell", 100, *_SPEEDS[100], 282.0, (40.0, 40.0, 40.0),
                           (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), _BASE_NVIDIA, _HW_NVIDIA),
    "cdna3": GpuTables("cdna3", 80, *_SPEEDS[80], 87.7, (20.0, 20.0, 20.0), (20.0, 20.0, 20.0),
                       (24.0, 23.6, 17.8), _BASE_RCCL, _HW_RCCL, ll128=False, tree_simple_one_node=False,
                       source="RCCL src/graph/tuning.cc (commit 0cbce2a7): base and hardware latencies, LL128 "
                              "off on gfx94x, no tree Simple in one node; ASSUMPTION: NCCL's SM80 search speeds, "
                              "duplication rule and Ampere caps stand in for RCCL's topology models"),
}

#: ``llMaxBws`` across nodes, by host CPU vendor (2 nodes, more): the table's rows 0 (Intel) and 1 (AMD).
LL_MAX_HOST = {"intel": (39.0, 20.4), "arm": (39.0, 20.4), "amd": (22.5, 19.0)}
#: ``getNetOverhead`` (us): Intel x86 1, AMD x86 2, others 1.
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0, "arm": 1.0}

#: ``treeCorrectionFactor`` per protocol (LL, LL128, Simple) for log2(bytes / 64) = 0 .. 23.
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)


def pcie_gbps(gen: int, lanes: int = 16) -> float:
    """NCCL's bandwidth of a PCIe link (GB/s per direction): lanes x per-lane rate / 80, the rate in
    100 Mb/s units (topo.cc ``kvDictPciGen``: Gen3 60, Gen4 120, Gen5 240, Gen6 480).

    Raises:
        ValueError: an unknown generation.
    """
    rate = {3: 60, 4: 120, 5: 240, 6: 480}
    if gen not in rate:
        raise ValueError(f"pcie gen = {gen!r}: expected one of {sorted(rate)}")
    return lanes * rate[gen] / 80.0


def nic_gbps(gbit_per_s: float) -> float:
    """NCCL's bandwidth of a NIC (GB/s): its Mb/s / 8000 (topo.cc), e.g. HDR 200 Gb/s -> 25."""
    return gbit_per_s * 1000.0 / 8000.0
