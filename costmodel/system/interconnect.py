"""The links between the chips of a system, as data with sources.

An `Interconnect` is what one chip has towards the others: ``links`` links of ``gbps_per_link``
GB/s (1e9 bytes/s) per direction each, a ``latency_us`` per hop (the time a message's first byte
takes from one chip's memory to another's: the link, the switch and the software that starts a
transfer), a ``topology`` (``switch``: every chip reaches every other at its full bandwidth through
a switch, one hop; ``ring``: each chip talks to its two neighbours, one link group each way;
``torus2d``: the chips of a collective form a grid of a x b (a the largest divisor of their count up to
its square root), wrapped in both dimensions, each chip's links split evenly between the two) and,
optionally, the energy per bit moved (``pj_per_bit``; None = not counted).

Bundled (`INTERCONNECTS`, `interconnect`):

===========  =====  ==============  ==========  ========  ==========================================
name         links  GB/s per link   topology    hop us    sources
             (dir)  per direction
===========  =====  ==============  ==========  ========  ==========================================
nvlink3      12     25              switch      8.92      NVIDIA A100 whitepaper (third-generation
                                                          NVLink: 12 links, 50 GB/s each both ways,
                                                          600 GB/s per GPU; NVSwitch in DGX / HGX
                                                          A100); hop latency: LLMCompass's NVLinkV3
                                                          figure (hardware_model/interconnect.py)
nvlink4      18     25              switch      8.92      NVIDIA H100 whitepaper (fourth generation:
                                                          18 links, 900 GB/s per GPU); hop latency
                                                          carried over from nvlink3 (an assumption)
pcie4_x16    1      31.5            switch      8.92      PCI Express 4.0: 16 GT/s x 16 lanes x
                                                          128/130 / 8 bits = 31.5 GB/s per direction;
                                                          hop latency as nvlink3 (an assumption)
===========  =====  ==============  ==========  ========  ==========================================

No energy per bit is bundled (none of these sources gives one); a system TOML may state one.

Errors: ValueError naming the key and the value (``interconnect.links = 0: ...``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["TOPOLOGIES", "Interconnect", "INTERCONNECTS", "interconnect"]

#: How the chips are connected (module docstring).
TOPOLOGIES = ("switch", "ring", "torus2d")


@dataclass(frozen=True)
class Interconnect:
    """One chip's links to the others (module docstring).

    Attributes:
        name: a label.
        links: links per chip (count).
        gbps_per_link: GB/s per link per direction (1e9 bytes/s).
        latency_us: latency per hop, microseconds.
        topology: one of `TOPOLOGIES`.
        pj_per_bit: energy per bit moved over a link, pJ, or None (not counted).
        source: where the figures come from.
        collective_us: a fixed start-up of every collective among several chips, microseconds (the
            software that launches it; GenZ's 5 us), besides the hops; default 0.

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

    def __post_init__(self) -> None:
        def bad(key: str, v: Any, what: str) -> ValueError:
            return ValueError(f"interconnect.{key} = {v!r}: expected {what}")

        if isinstance(self.links, bool) or not isinstance(self.links, int) or self.links < 1:
            raise bad("links", self.links, "a positive integer (links per chip)")
        for key, positive in (("gbps_per_link", True), ("latency_us", False), ("collective_us", False)):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (positive and v == 0):
                raise bad(key, v, "a finite number " + ("> 0 (GB/s per link per direction)" if positive else ">= 0 (us)"))
        if self.topology not in TOPOLOGIES:
            raise bad("topology", self.topology, f"one of {list(TOPOLOGIES)}")
        v = self.pj_per_bit
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0):
            raise bad("pj_per_bit", v, "a finite number >= 0 (pJ per bit) or absent")

    @property
    def bytes_per_s(self) -> float:
        """What one chip sends per second in one direction over all its links (bytes/s): links x
        GB/s per link x 1e9. On a ring half of it goes each way round (`costmodel.system.collectives`)."""
        return self.links * self.gbps_per_link * 1e9

    @classmethod
    def from_dict(cls, d: Any, src: str = "<dict>") -> "Interconnect":
        """From a TOML table ``{name, links, gbps_per_link, latency_us, topology, pj_per_bit, source,
        collective_us}``
        (``name`` and ``source`` optional), or a bundled name.

        Raises:
            ValueError: ``{src}: interconnect...`` for an unknown name or key or a bad value.
        """
        if isinstance(d, str):
            try:
                return interconnect(d)
            except ValueError as e:
                raise ValueError(f"{src}: {e}") from None
        known = ("name", "links", "gbps_per_link", "latency_us", "topology", "pj_per_bit", "source", "collective_us")
        if not isinstance(d, dict):
            raise ValueError(f"{src}: interconnect = {d!r}: expected a bundled name {list(INTERCONNECTS)} or a table "
                             f"with the keys {list(known)}")
        for k in d:
            if k not in known:
                raise ValueError(f"{src}: interconnect.{k} = {d[k]!r}: no such key; known keys: {list(known)}")
        missing = [k for k in ("links", "gbps_per_link", "latency_us") if k not in d]
        if missing:
            raise ValueError(f"{src}: interconnect: missing {missing}")
        try:
            return cls(**{"name": "custom", **d})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{src}: {e}") from None


_A100 = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): third-generation NVLink, 12 links of "
         "25 GB/s per direction (600 GB/s per GPU both ways), NVSwitch; hop latency 8.92 us: LLMCompass "
         "(Zhang et al., ISCA 2024), hardware_model/interconnect.py, NVLinkV3")

#: The bundled interconnects (module docstring).
INTERCONNECTS: dict[str, Interconnect] = {
    "nvlink3": Interconnect("nvlink3", 12, 25.0, 8.92, "switch", None, _A100),
    "nvlink4": Interconnect("nvlink4", 18, 25.0, 8.92, "switch", None,
                            "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): fourth-generation NVLink, "
                            "18 links, 900 GB/s per GPU both ways, NVSwitch; hop latency: nvlink3's (an assumption)"),
    "pcie4_x16": Interconnect("pcie4_x16", 1, 31.5, 8.92, "switch", None,
                              "PCI Express Base Specification 4.0: 16 GT/s per lane, 128b/130b, x16 = 31.5 GB/s "
                              "per direction; hop latency: nvlink3's (an assumption)"),
}


def interconnect(name: str) -> Interconnect:
    """A bundled interconnect by name.

    Raises:
        ValueError: ``interconnect = 'x': expected one of [...]``.
    """
    if name not in INTERCONNECTS:
        raise ValueError(f"interconnect = {name!r}: expected one of {list(INTERCONNECTS)} or a table")
    return INTERCONNECTS[name]
