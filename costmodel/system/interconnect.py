"""The links between the chips of a system, as data with sources.

An `Interconnect` is what one chip has towards the others: ``links`` links of ``gbps_per_link``
GB/s (1e9 bytes/s) per direction each, a ``latency_us`` per hop for the alpha-beta model (the time a
message's first byte takes from one chip's memory to another's: the link, the switch and the software
that starts a transfer), a ``topology`` (``switch``: every chip reaches every other at its full
bandwidth through a switch, one hop; ``ring``: each chip talks to its two neighbours, one link group
each way; ``torus2d``: the chips of a collective form a grid of a x b (a the largest divisor of their
count up to its square root), wrapped in both dimensions, each chip's links split evenly between the
two; ``fully_connected``: one direct link to each other chip of the domain) and, optionally, the energy
per bit moved (``pj_per_bit``; None = not counted).

How collectives are costed on it (``model``): ``alpha_beta`` (the ring formulas with ``latency_us``
per hop, `costmodel.system.collectives`) or ``nccl`` (NCCL's own tuning model and runtime,
`costmodel.system.nccl`), which also reads: ``link`` (NCCL's link class for its latency table:
``nvlink``, ``pci``, ``net``), ``gpu_arch`` (the generation whose constants apply:
`costmodel.system.nccl_tables.GPUS`), ``nccl_gbps_per_link`` (the bandwidth NCCL's topology gives a
link; None: NCCL's NVLink figure of the generation for ``nvlink``, else ``gbps_per_link``),
``host_cpu`` (``intel``, ``amd``, ``arm``: NCCL's network overhead and LL caps across nodes). Every
interconnect may state a ``domain`` (the chips one NVLink / NVSwitch / fabric domain holds; None =
unbounded) and ``scale_out`` (the bundled interconnect a collective over more chips crosses:
a network, ``link = "net"``, makes NCCL's nodes of ``domain`` GPUs; PCIe joins the domains inside one
host). A TPU's ICI torus stays alpha-beta (NCCL does not run there; ``nccl`` rejects ``torus2d``).

Bundled (`INTERCONNECTS`, `interconnect`; GB/s per link per direction; hop us: alpha-beta only):

===============  =====  ======  ===============  ======  ======  ====  ==========  ======================
name             links  GB/s    topology         model   NCCL    hop   domain /    sources
                                                         GB/s    us    scale-out
===============  =====  ======  ===============  ======  ======  ====  ==========  ======================
nvlink3          12     25      switch           nccl    20      8.92  8 / ib_hdr  [A100], [DGXA], [LLMC],
                                                                                   [NCCL] SM80_NVLINK_BW
nvlink3_bridge   12     25      switch           nccl    20      11.8  2 /         [A100P], [AZ], [NCCL]
                                                                       pcie4_x16
nvlink4          18     25      switch           nccl    20.6    8.92  8 / ib_ndr  [H100], [DGXH], [NCCL]
                                                                                   SM90_NVLINK_BW
nvlink5          18     50      switch           nccl    40.1    11.8  8 / ib_ndr  [B200], [DGXB], [NCCL]
                                                                                   SM100_NVLINK_BW
nvlink5_nvl72    18     50      switch           nccl    40.1    11.8  72 /        [B200], [NVL72],
                                                                       ib_ndr      [NCCL]
pcie4_x16        1      31.5    switch           nccl    24      8.92  -           [PCIE4], [NCCL] topo.cc
pcie5_x16        1      63.0    switch           nccl    48      14.1  -           [PCIE5], [NCCL] topo.cc
infinity_fabric  7      64      fully_connected  nccl    64      20.6  8 / ib_ndr  [CDNA3], [MI300X],
                                                                                   [RCCL]
ib_hdr           1      25      switch           nccl    25      22.4  1 /         [HDR], [DGXA], [NCCL]
ib_ndr           1      50      switch           nccl    50      22.4  1 /         [NDR], [DGXH], [NCCL]
ici_v5e          4      25      torus2d          alpha   -       1.0   -           [V5E] (hop: ASSUMPTION)
ici_v6e          4      56      torus2d          alpha   -       1.0   -           [V6E] (hop: ASSUMPTION)
===============  =====  ======  ===============  ======  ======  ====  ==========  ======================

Generations and hosts: nvlink3, nvlink3_bridge, pcie4_x16, ib_hdr: ``ampere``; nvlink4, pcie5_x16,
ib_ndr: ``hopper``; nvlink5*: ``blackwell``; infinity_fabric: ``cdna3``. Hosts: nvlink3 and ib_hdr
``amd`` (DGX A100: two AMD EPYC 7742 [DGXA]), nvlink3_bridge ``amd`` (Azure NC A100 v4: AMD EPYC 7V13
[AZ]), nvlink4 and nvlink5 ``intel`` (DGX H100: Xeon Platinum 8480C [DGXH]; DGX B200: Xeon Platinum
8570 [DGXB]), nvlink5_nvl72 ``arm`` (Grace [NVL72]), infinity_fabric ``amd`` (ASSUMPTION: an EPYC
host), the rest ``intel``.

Sources:

* [A100] NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): third-generation NVLink, 12 links
  of 25 GB/s per direction, 600 GB/s per GPU both ways; NVSwitch in DGX / HGX A100 (8 GPUs).
* [A100P] NVIDIA A100 PCIe product brief: an NVLink bridge joins 2 GPUs at 600 GB/s bidirectional
  (12 links' worth); beyond the pair, PCIe Gen4.
* [AZ] Microsoft Azure NC A100 v4 series documentation: 4 A100 80GB PCIe, NVLink bridges between pairs,
  AMD EPYC 7V13 (the set `tests/data/vidur_a100/all_reduce_pairwise_nvlink.csv` ran on).
* [H100] NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): fourth generation, 18 links,
  900 GB/s per GPU both ways (450 per direction), NVSwitch in HGX H100 / H200 (8 GPUs).
* [B200] NVIDIA Blackwell Architecture Technical Brief (2024): fifth-generation NVLink, 18 links,
  1.8 TB/s per GPU both ways (900 GB/s per direction).
* [NVL72] NVIDIA GB200 NVL72 product page: 72 Blackwell GPUs in one NVLink domain (130 TB/s), Grace
  CPUs; scale-out ib_ndr, 400 Gb/s per GPU: ASSUMPTION (as DGX B200).
* [DGXA] NVIDIA DGX A100 datasheet / user guide: 8 A100 SXM4 on six NVSwitches, 8 single-port
  ConnectX-6 HDR 200 Gb/s InfiniBand for the compute fabric (one per GPU), two AMD EPYC 7742.
* [DGXH] NVIDIA DGX H100 user guide: 8 H100 SXM5, 4 NVSwitches, 8 ConnectX-7 400 Gb/s NDR (one per
  GPU), two Intel Xeon Platinum 8480C.
* [DGXB] NVIDIA DGX B200 datasheet: 8 B200, 8 ConnectX-7 400 Gb/s, two Intel Xeon Platinum 8570.
* [PCIE4] PCI Express Base Specification 4.0: 16 GT/s per lane, 128b/130b, x16 = 31.5 GB/s per
  direction. [PCIE5] 5.0: 32 GT/s, x16 = 63.0 GB/s.
* [CDNA3] AMD CDNA 3 Architecture whitepaper and [MI300X] AMD Instinct MI300X datasheet: 7 Infinity
  Fabric links of 128 GB/s bidirectional (64 per direction), 896 GB/s aggregate, 8 OAM GPUs fully
  connected; scale-out ib_ndr: ASSUMPTION (a 400 Gb/s NIC per GPU as on the DGX H100).
* [HDR] InfiniBand HDR 200 Gb/s = 25 GB/s; [NDR] NDR 400 Gb/s = 50 GB/s (per port and direction).
* [NCCL] NVIDIA NCCL 2.30.7 (commit 5067397c): the per-link figures of topo.h / topo.cc
  (`costmodel.system.nccl_tables`); the hop latencies of the new entries are NCCL's one ring step of
  Simple, base 8.4 us + the link class's 3.4 (NVLink), 5.7 (PCI), 14.0 (network); [RCCL] RCCL's 17 +
  3.6 for infinity_fabric.
* [LLMC] the 8.92 us hop of nvlink3, nvlink4 and pcie4_x16 is LLMCompass's NVLinkV3 figure (Zhang et
  al., ISCA 2024, hardware_model/interconnect.py), kept for the alpha-beta model and the K/V links.
* [V5E] / [V6E] Google Cloud TPU documentation, TPU v5e and TPU v6e system architecture pages: inter-chip
  interconnect bandwidth per chip (1,600 / 3,584 Gbps), 2D torus topology, 256 chips a pod.

No energy per bit is bundled (none of these sources gives one); a system TOML may state one.

Errors: ValueError naming the key and the value (``interconnect.links = 0: ...``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from .nccl_tables import GPUS, NVLINK_GBPS

__all__ = ["TOPOLOGIES", "MODELS", "LINKS", "HOSTS", "Interconnect", "INTERCONNECTS", "interconnect"]

#: How the chips are connected (module docstring).
TOPOLOGIES = ("switch", "ring", "torus2d", "fully_connected")
#: How collectives are costed (module docstring).
MODELS = ("alpha_beta", "nccl")
#: NCCL's link classes for its hardware latencies.
LINKS = ("nvlink", "pci", "net")
#: Host CPU vendors NCCL tells apart.
HOSTS = ("intel", "amd", "arm")


def _bad(key: str, v: Any, what: str) -> ValueError:
    return ValueError(f"interconnect.{key} = {v!r}: expected {what}")


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


@dataclass(frozen=True)
class Interconnect:
    """One chip's links to the others (module docstring).

    Attributes:
        name: a label.
        links: links per chip (count).
        gbps_per_link: GB/s per link per direction (1e9 bytes/s).
        latency_us: latency per hop of the alpha-beta model, microseconds.
        topology: one of `TOPOLOGIES`.
        pj_per_bit: energy per bit moved over a link, pJ, or None (not counted).
        source: where the figures come from.
        collective_us: a fixed start-up of every alpha-beta collective among several chips,
            microseconds (the software that launches it; GenZ's 5 us), besides the hops; default 0.
        model: one of `MODELS`; default ``alpha_beta``.
        link: NCCL's link class, one of `LINKS`; default ``nvlink``.
        gpu_arch: the generation of NCCL's constants (`costmodel.system.nccl_tables.GPUS`).
        nccl_gbps_per_link: NCCL's bandwidth of one link (GB/s), or None (module docstring).
        domain: chips one domain holds, or None (unbounded).
        scale_out: the bundled interconnect beyond the domain, or None.
        host_cpu: one of `HOSTS`.

    Raises:
        ValueError: ``interconnect.<key> = <value>: expected ...``.
    """

    name: str
    links: int
    gbps_per_link: float
    latency_us: float
    topology: str = "switch"
    pj_per_bit: float | None = None
    source: str = ""
    collective_us: float = 0.0
    model: str = "alpha_beta"
    link: str = "nvlink"
    gpu_arch: str = "ampere"
    nccl_gbps_per_link: float | None = None
    domain: int | None = None
    scale_out: str | None = None
    host_cpu: str = "intel"

    def __post_init__(self) -> None:
        if isinstance(self.links, bool) or not isinstance(self.links, int) or self.links < 1:
            raise _bad("links", self.links, "a positive integer (links per chip)")
        for key, positive in (("gbps_per_link", True), ("latency_us", False), ("collective_us", False)):
            v = getattr(self, key)
            if not _number(v) or v < 0 or (positive and v == 0):
                what = "> 0 (GB/s per link per direction)" if positive else ">= 0 (us)"
                raise _bad(key, v, "a finite number " + what)
        for key, allowed in (("topology", TOPOLOGIES), ("model", MODELS), ("link", LINKS),
                             ("gpu_arch", tuple(GPUS)), ("host_cpu", HOSTS)):
            if getattr(self, key) not in allowed:
                raise _bad(key, getattr(self, key), f"one of {list(allowed)}")
        v = self.pj_per_bit
        if v is not None and (not _number(v) or v < 0):
            raise _bad("pj_per_bit", v, "a finite number >= 0 (pJ per bit) or absent")
        v = self.nccl_gbps_per_link
        if v is not None and (not _number(v) or v <= 0):
            raise _bad("nccl_gbps_per_link", v, "a finite number > 0 (GB/s per link) or absent")
        v = self.domain
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise _bad("domain", v, "a positive integer (chips per domain) or absent")
        if self.scale_out is not None and (not isinstance(self.scale_out, str) or self.scale_out == self.name):
            raise _bad("scale_out", self.scale_out, "the name of another bundled interconnect or absent")
        if self.model == "nccl" and self.topology == "torus2d":
            raise _bad("topology", self.topology, "switch, ring or fully_connected with model = 'nccl' "
                       "(a torus such as a TPU's ICI: model = 'alpha_beta')")

    @property
    def bytes_per_s(self) -> float:
        """What one chip sends per second in one direction over all its links (bytes/s): links x
        GB/s per link x 1e9. On a ring half of it goes each way round (`costmodel.system.collectives`)."""
        return self.links * self.gbps_per_link * 1e9

    @property
    def nccl_link_gbps(self) -> float:
        """NCCL's bandwidth of one link (GB/s): ``nccl_gbps_per_link``, else NCCL's NVLink figure of
        ``gpu_arch`` for an ``nvlink`` link (`costmodel.system.nccl_tables.NVLINK_GBPS`), else
        ``gbps_per_link``."""
        if self.nccl_gbps_per_link is not None:
            return float(self.nccl_gbps_per_link)
        if self.link == "nvlink" and self.gpu_arch in NVLINK_GBPS:
            return NVLINK_GBPS[self.gpu_arch]
        return float(self.gbps_per_link)

    @classmethod
    def from_dict(cls, d: Any, src: str = "<dict>") -> "Interconnect":
        """From a TOML table of the fields (``name``, ``source`` optional; ``links`` and
        ``gbps_per_link`` required, ``latency_us`` too unless ``model = "nccl"``), or a bundled name.

        Raises:
            ValueError: ``{src}: interconnect...`` for an unknown name or key or a bad value.
        """
        if isinstance(d, str):
            try:
                return interconnect(d)
            except ValueError as e:
                raise ValueError(f"{src}: {e}") from None
        known = tuple(f.name for f in fields(cls))
        if not isinstance(d, dict):
            raise ValueError(f"{src}: interconnect = {d!r}: expected a bundled name {list(INTERCONNECTS)} or a table "
                             f"with the keys {list(known)}")
        for k in d:
            if k not in known:
                raise ValueError(f"{src}: interconnect.{k} = {d[k]!r}: no such key; known keys: {list(known)}")
        need = ("links", "gbps_per_link") + (() if d.get("model") == "nccl" else ("latency_us",))
        missing = [k for k in need if k not in d]
        if missing:
            raise ValueError(f"{src}: interconnect: missing {missing}")
        so = d.get("scale_out")
        if so is not None and so not in INTERCONNECTS:
            raise ValueError(f"{src}: interconnect.scale_out = {so!r}: expected one of {list(INTERCONNECTS)} or absent")
        try:
            return cls(**{"name": "custom", "latency_us": 0.0, **d})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{src}: {e}") from None


_LLMC = "hop latency 8.92 us (alpha-beta): LLMCompass (ISCA 2024) hardware_model/interconnect.py, NVLinkV3"
_NCCL = "NCCL 2.30.7 (commit 5067397c) topo.h / topo.cc / tuning.cc"


def _nv(name, links, gbps, hop, arch, domain, scale_out, host, source, nccl=None, link="nvlink",
        topology="switch") -> Interconnect:
    return Interconnect(name, links, gbps, hop, topology, None, source, 0.0, "nccl", link, arch, nccl, domain,
                        scale_out, host)


#: The bundled interconnects (module docstring).
INTERCONNECTS: dict[str, Interconnect] = {i.name: i for i in (
    _nv("nvlink3", 12, 25.0, 8.92, "ampere", 8, "ib_hdr", "amd",
        "NVIDIA A100 whitepaper (2020): 12 NVLink3 links of 25 GB/s per direction, NVSwitch, 8 GPUs per HGX / DGX "
        f"A100; DGX A100 datasheet: 8 x HDR 200 Gb/s, AMD EPYC 7742; NCCL 20 GB/s per link ({_NCCL}); {_LLMC}"),
    _nv("nvlink3_bridge", 12, 25.0, 11.8, "ampere", 2, "pcie4_x16", "amd",
        "NVIDIA A100 PCIe product brief: NVLink bridge, 600 GB/s bidirectional between 2 GPUs; PCIe Gen4 "
        f"beyond; Azure NC A100 v4 (AMD EPYC 7V13); NCCL 20 GB/s per link, hop = one ring Simple step ({_NCCL})"),
    _nv("nvlink4", 18, 25.0, 8.92, "hopper", 8, "ib_ndr", "intel",
        "NVIDIA H100 whitepaper (2022): 18 NVLink4 links, 900 GB/s per GPU both ways, NVSwitch, 8 GPUs per HGX "
        f"H100 / H200; DGX H100: 8 x NDR 400 Gb/s, Xeon 8480C; NCCL 20.6 GB/s per link ({_NCCL}); hop latency: "
        "nvlink3's (an assumption)"),
    _nv("nvlink5", 18, 50.0, 11.8, "blackwell", 8, "ib_ndr", "intel",
        "NVIDIA Blackwell technical brief (2024): 18 NVLink5 links, 1.8 TB/s per GPU both ways; HGX / DGX B200: "
        f"8 GPUs, 8 x 400 Gb/s, Xeon 8570; NCCL 40.1 GB/s per link, hop = one ring Simple step ({_NCCL})"),
    _nv("nvlink5_nvl72", 18, 50.0, 11.8, "blackwell", 72, "ib_ndr", "arm",
        "NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain, 1.8 TB/s per GPU both ways, Grace hosts; "
        f"scale-out 400 Gb/s per GPU (ASSUMPTION, as DGX B200); NCCL 40.1 GB/s per link ({_NCCL})"),
    _nv("pcie4_x16", 1, 31.5, 8.92, "ampere", None, None, "intel",
        "PCI Express Base Specification 4.0: 16 GT/s per lane, 128b/130b, x16 = 31.5 GB/s per direction; NCCL "
        f"16 x 120 / 80 = 24 GB/s ({_NCCL}); hop latency: nvlink3's (an assumption)", nccl=24.0, link="pci"),
    _nv("pcie5_x16", 1, 63.0, 14.1, "hopper", None, None, "intel",
        "PCI Express Base Specification 5.0: 32 GT/s per lane, 128b/130b, x16 = 63.0 GB/s per direction; NCCL "
        f"16 x 240 / 80 = 48 GB/s, hop = one ring Simple step over PCI ({_NCCL})", nccl=48.0, link="pci"),
    _nv("infinity_fabric", 7, 64.0, 20.6, "cdna3", 8, "ib_ndr", "amd",
        "AMD CDNA 3 whitepaper / MI300X datasheet: 7 Infinity Fabric links of 128 GB/s bidirectional (896 GB/s "
        "aggregate), 8 GPUs fully connected; RCCL (commit 0cbce2a7) tuning.cc latencies, hop = 17 + 3.6 us; "
        "scale-out 400 Gb/s per GPU and an EPYC host: ASSUMPTIONS", nccl=64.0, topology="fully_connected"),
    _nv("ib_hdr", 1, 25.0, 22.4, "ampere", 1, None, "amd",
        "InfiniBand HDR 200 Gb/s per GPU (DGX A100: 8 ConnectX-6, AMD EPYC 7742); NCCL 200000 / 8000 = 25 GB/s, "
        f"hop = one ring Simple step over the network ({_NCCL})", link="net"),
    _nv("ib_ndr", 1, 50.0, 22.4, "hopper", 1, None, "intel",
        "InfiniBand NDR 400 Gb/s per GPU (DGX H100: 8 ConnectX-7, Xeon 8480C); NCCL 400000 / 8000 = 50 GB/s, "
        f"hop = one ring Simple step over the network ({_NCCL})", link="net"),
    Interconnect("ici_v5e", 4, 25.0, 1.0, "torus2d", None,
                 "Google Cloud TPU v5e documentation: 1,600 Gbps of inter-chip interconnect per chip, a 2D torus "
                 "(16 x 16 a pod), 4 ICI ports: 200 GB/s per chip taken as both directions, 25 GB/s per link per "
                 "direction (ASSUMPTION: the figure's direction count); hop latency 1 us: ASSUMPTION (not published)"),
    Interconnect("ici_v6e", 4, 56.0, 1.0, "torus2d", None,
                 "Google Cloud TPU v6e (Trillium) documentation: 3,584 Gbps of inter-chip interconnect per chip, a 2D "
                 "torus (16 x 16 a pod), 4 ICI ports: 448 GB/s per chip taken as both directions, 56 GB/s per link "
                 "per direction (ASSUMPTION: the figure's direction count); hop latency 1 us: ASSUMPTION"),
)}


def interconnect(name: str) -> Interconnect:
    """A bundled interconnect by name.

    Raises:
        ValueError: ``interconnect = 'x': expected one of [...]``.
    """
    if name not in INTERCONNECTS:
        raise ValueError(f"interconnect = {name!r}: expected one of {list(INTERCONNECTS)} or a table")
    return INTERCONNECTS[name]
