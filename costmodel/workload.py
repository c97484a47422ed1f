"""Workloads: one DNN layer (`Layer`) and a network of layers with repeat counts (`Network`).

Loop dimensions use the standard names of the field (ZigZag / Timeloop / CoSA):

====  ==========================================================
B     batch
K     output channels per group (DeepOpt's F, "filters")
C     input channels per group
OY    output rows (DeepOpt's E)
OX    output columns (DeepOpt's G)
FY    filter rows (DeepOpt's R)
FX    filter columns (DeepOpt's S)
G     groups (1 for a dense conv, = channels for depthwise)
====  ==========================================================

K and C are *per group*, so MACs = G * B * K * C * OY * OX * FY * FX. A fully-connected layer
is a 1x1 convolution on a 1x1 map (``kind="fc"``), its batch in B.

The input window is IY = SY*(OY-1) + DY*(FY-1) + 1 (likewise IX): the *padded* input extent
spanned. Padding PY/PX is recorded for reference; the cost models use IY/IX, except that the
loop-nest model counts only the rows and columns a tile reads (`costmodel.loopnest.reference.window_rows`:
a 1x1 convolution at stride 2 reads every other row of its span).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

__all__ = ["Layer", "Network", "LOOP_DIMS"]

#: The loop dimensions in their canonical order.
LOOP_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")

_KINDS = ("conv", "fc", "dwconv")


@dataclass(frozen=True)
class Layer:
    """One convolution / fully-connected layer as a loop nest.

    Sizes are loop bounds (dimensionless counts); precisions are in bits.

    Raises:
        ValueError: if a size is not a positive integer, a padding is negative or ``kind``
            is unknown.
    """

    name: str
    K: int
    C: int
    OY: int = 1
    OX: int = 1
    FY: int = 1
    FX: int = 1
    B: int = 1
    G: int = 1
    SY: int = 1
    SX: int = 1
    DY: int = 1
    DX: int = 1
    PY: float = 0
    PX: float = 0
    kind: str = "conv"
    w_bits: int = 8
    i_bits: int = 8
    o_bits: int = 8          # final output precision
    o_partial_bits: int = 32  # partial-sum precision

    def __post_init__(self) -> None:
        for dim in ("K", "C", "OY", "OX", "FY", "FX", "B", "G", "SY", "SX", "DY", "DX",
                    "w_bits", "i_bits", "o_bits", "o_partial_bits"):
            v = getattr(self, dim)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"layer {self.name!r}: {dim} must be a positive integer, got {v!r}")
        for dim in ("PY", "PX"):
            v = getattr(self, dim)
            if not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"layer {self.name!r}: {dim} must be >= 0, got {v!r}")
        if self.kind not in _KINDS:
            raise ValueError(f"layer {self.name!r}: kind must be one of {_KINDS}, got {self.kind!r}")

    @property
    def IY(self) -> int:
        """Input rows read (padded): SY*(OY-1) + DY*(FY-1) + 1."""
        return self.SY * (self.OY - 1) + self.DY * (self.FY - 1) + 1

    @property
    def IX(self) -> int:
        """Input columns read (padded): SX*(OX-1) + DX*(FX-1) + 1."""
        return self.SX * (self.OX - 1) + self.DX * (self.FX - 1) + 1

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one execution: G*B*K*C*OY*OX*FY*FX."""
        return self.G * self.B * self.K * self.C * self.OY * self.OX * self.FY * self.FX

    @property
    def weight_count(self) -> int:
        """Weights (elements): G*K*C*FY*FX."""
        return self.G * self.K * self.C * self.FY * self.FX

    def dims(self) -> dict[str, int]:
        """The loop bounds as a dict over `LOOP_DIMS`."""
        return {d: getattr(self, d) for d in LOOP_DIMS}

    def shape_key(self) -> tuple:
        """Everything but the name: two layers with equal keys cost the same."""
        return tuple(v for k, v in self.__dict__.items() if k != "name")

    def with_(self, **changes) -> "Layer":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Network:
    """An ordered list of layers, each with a repeat count.

    ``repeats[i]`` says how many times ``layers[i]`` runs per inference (for example the
    identical blocks of a ResNet stage, or AlexNet's two groups when a variant lists one group).
    """

    name: str
    layers: tuple[Layer, ...]
    repeats: tuple[int, ...] = field(default=())
    source: str = ""

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError(f"network {self.name!r} has no layers")
        if not self.repeats:
            object.__setattr__(self, "repeats", tuple(1 for _ in self.layers))
        if len(self.repeats) != len(self.layers):
            raise ValueError(f"network {self.name!r}: {len(self.repeats)} repeats for {len(self.layers)} layers")
        for r in self.repeats:
            if isinstance(r, bool) or not isinstance(r, int) or r < 1:
                raise ValueError(f"network {self.name!r}: repeat counts must be positive integers, got {r!r}")

    @property
    def macs(self) -> int:
        """Total MACs of one inference: sum of layer MACs x repeats."""
        return sum(l.macs * r for l, r in zip(self.layers, self.repeats))

    @property
    def layer_count(self) -> int:
        """Layers executed per inference (repeats counted)."""
        return sum(self.repeats)

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(zip(self.layers, self.repeats))

    def unique(self) -> "Network":
        """The same network with layers of equal shape merged (repeats added)."""
        order: dict[tuple, int] = {}
        layers: list[Layer] = []
        reps: list[int] = []
        for l, r in self:
            k = l.shape_key()
            if k in order:
                reps[order[k]] += r
            else:
                order[k] = len(layers)
                layers.append(l)
                reps.append(r)
        return Network(self.name, tuple(layers), tuple(reps), self.source)

