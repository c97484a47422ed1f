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
spanned. Padding PY/PX (the mean of the begin and end pads) and the unpadded input size
``in_rows`` / ``in_cols`` (where the zoo file, the ONNX or ZigZag workload gives it) are
recorded; the systolic and NPU models use IY/IX, the loop-nest model counts only the rows and
columns a tile reads, at most the real input's (`costmodel.loopnest.window.window_rows` and
`window_caps`: a 1x1 convolution at stride 2 reads every other row of its span, and a padded
convolution's halo is generated, not read).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

__all__ = ["Layer", "Network", "VectorOp", "LOOP_DIMS", "VECTOR_OPS", "W_ROLES", "O_ROLES", "INPUT_FIELDS"]

#: The loop dimensions in their canonical order.
LOOP_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")

#: Layer kinds: convolutions, fully-connected layers, and the matmuls of a transformer (``matmul``:
#: B rows x C contracted x K columns, G independent matrices).
_KINDS = ("conv", "fc", "dwconv", "matmul")

#: What a layer's second operand W is: trained ``weight`` s, or the ``kv_cache`` (the K or V cache
#: that the attention score / context matmuls read: an activation of earlier tokens).
W_ROLES = ("weight", "kv_cache")
#: What a layer's output O is: an ``activation``, or new ``kv_cache`` entries (the K and V projections).
O_ROLES = ("activation", "kv_cache")

#: Fields added after model version 3 whose default values are left out of `Layer.hash_fields`,
#: so the problem ids and config hashes of layers that do not use them stay what they were.
_NEW_FIELDS = {"w_role": "weight", "o_role": "activation", "fixed_bits": (), "in_rows": None, "in_cols": None,
               "onchip": ()}

#: The fields only the loop-nest model reads (model version 4: the unpadded input size,
#: `costmodel.loopnest.window.window_caps`); `Layer.hash_fields(inputs=False)` leaves them out.
INPUT_FIELDS = ("in_rows", "in_cols")

#: The element-wise / row-wise operations between the matmuls (`VectorOp.op`); what each costs per
#: element is `costmodel.vector.OP_PRIMITIVES`.
VECTOR_OPS = ("softmax", "layernorm", "rmsnorm", "gelu", "silu", "mul", "add", "rope", "online_softmax", "sigmoid", "softcap")


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
    w_role: str = "weight"    # `W_ROLES`: weights, or the KV cache read by attention
    o_role: str = "activation"  # `O_ROLES`: an activation, or new KV cache entries
    fixed_bits: tuple[str, ...] = ()  # operands ("W", "I", "O_final") whose bits override [precision]
    in_rows: int | None = None  # rows of the unpadded input (None: not known, the padded window is read)
    in_cols: int | None = None  # columns of the unpadded input
    # operands that never leave the chip (a fused group's tile: `costmodel.zoo.fusion`): the
    # outermost memory level does not serve them for this layer (`Accelerator.for_layer`)
    onchip: tuple[str, ...] = ()

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
        if self.w_role not in W_ROLES:
            raise ValueError(f"layer {self.name!r}: w_role must be one of {W_ROLES}, got {self.w_role!r}")
        if self.o_role not in O_ROLES:
            raise ValueError(f"layer {self.name!r}: o_role must be one of {O_ROLES}, got {self.o_role!r}")
        object.__setattr__(self, "fixed_bits", tuple(self.fixed_bits))
        for dim in INPUT_FIELDS:
            v = getattr(self, dim)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"layer {self.name!r}: {dim} must be a positive integer or empty, got {v!r}")
        object.__setattr__(self, "onchip", tuple(self.onchip))
        if any(o not in ("W", "I", "O") for o in self.onchip) or len(set(self.onchip)) != len(self.onchip):
            raise ValueError(f"layer {self.name!r}: onchip may hold W, I, O once each, got {self.onchip!r}")
        bad = [b for b in self.fixed_bits if b not in ("W", "I", "O_final")]
        if bad:
            raise ValueError(f"layer {self.name!r}: fixed_bits may hold W, I, O_final, got {bad!r}")

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

    def hash_fields(self, inputs: bool = True) -> dict:
        """Every field but the name, as problem ids and config hashes see the layer: the fields
        added for transformer workloads (``w_role``, ``o_role``, ``fixed_bits``) and the unpadded
        input size (``in_rows``, ``in_cols``) only where they differ from their defaults, so a
        layer hashes as it did before they existed; with ``inputs=False`` never the input size
        (for models that do not read it: the systolic and NPU models)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()
                if k != "name" and not (k in _NEW_FIELDS and v == _NEW_FIELDS[k])
                and (inputs or k not in INPUT_FIELDS)}

    def shape_key(self) -> tuple:
        """Everything but the name: two layers with equal keys cost the same."""
        return tuple(v for k, v in self.__dict__.items() if k != "name")

    def with_(self, **changes) -> "Layer":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class VectorOp:
    """One operation between the matmuls (softmax, a norm, an activation, RoPE, an element-wise
    multiply or add), run on the accelerator's vector unit (`costmodel.vector`).

    ``elements``: output elements of one execution (count); ``inputs``: input tensors of
    ``elements`` elements each that it reads (2 for an element-wise add or multiply, 1 otherwise;
    a norm's gain and a softmax's row statistics are not counted as tensors); ``rows``: the rows
    a row-wise op (softmax, norms) reduces over (elements / rows per row); ``bits``: the
    precision of its tensors, or None for the accelerator's activation precision (``[precision]
    I``, else 8). ``in_flight``: how many of its inputs arrive from the matmul that produces them
    as its accumulators drain (a fused element-wise op, `costmodel.zoo.fusion`): those are not read
    from memory, and its output replaces the producer's (no write of its own); 0: it reads every
    input and writes its output. ``overlaps``: the layers (by name) whose execution it overlaps (the
    vector unit works while the array does: a fused op beside its producer, the online softmax
    beside the attention tiles); () = it runs after them, on its own. ``onchip``: its tensors are
    ones a fused group keeps on chip (fused attention's score tile, partial output: the tile
    layers declare them `Layer.onchip`); False: they live where the layers around it read and
    write them, the outermost memory (`costmodel.vector` rule b).

    Raises:
        ValueError: unknown ``op``, a count that is not a positive integer, or bad ``bits``.
    """

    name: str
    op: str
    elements: int
    inputs: int = 1
    rows: int = 1
    bits: int | None = None
    in_flight: int = 0
    overlaps: tuple[str, ...] = ()
    onchip: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "overlaps", tuple(self.overlaps))
        if not isinstance(self.onchip, bool):
            raise ValueError(f"vector op {self.name!r}: onchip must be true or false, got {self.onchip!r}")
        if isinstance(self.in_flight, bool) or not isinstance(self.in_flight, int) or not 0 <= self.in_flight <= self.inputs:
            raise ValueError(f"vector op {self.name!r}: in_flight must be an integer from 0 to inputs "
                             f"({self.inputs}), got {self.in_flight!r}")
        if self.op not in VECTOR_OPS:
            raise ValueError(f"vector op {self.name!r}: op must be one of {VECTOR_OPS}, got {self.op!r}")
        for k in ("elements", "inputs", "rows"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"vector op {self.name!r}: {k} must be a positive integer, got {v!r}")
        if self.bits is not None and (isinstance(self.bits, bool) or not isinstance(self.bits, int) or self.bits < 1):
            raise ValueError(f"vector op {self.name!r}: bits must be a positive integer or None, got {self.bits!r}")

    def to_dict(self) -> dict:
        """JSON-able fields (``in_flight``, ``overlaps`` and ``onchip`` only where set)."""
        d = dict(self.__dict__)
        if not self.onchip:
            del d["onchip"]
        if not self.in_flight:
            del d["in_flight"]
        if not self.overlaps:
            del d["overlaps"]
        else:
            d["overlaps"] = list(self.overlaps)
        return d


@dataclass(frozen=True)
class Network:
    """An ordered list of layers, each with a repeat count, and the vector operations between them.

    ``repeats[i]`` says how many times ``layers[i]`` runs per inference (for example the
    identical blocks of a ResNet stage, or AlexNet's two groups when a variant lists one group).
    ``vector_ops[i]`` runs ``vector_repeats[i]`` times (the element-wise work of a transformer
    step; empty for the CNN zoo, which counts convolutions and FC layers only). ``workload`` holds
    the parameters a transformer step was built with (``model``, ``phase``, ``batch``, ``seq``,
    ``context``, ``tokens`` produced, precisions; `costmodel.transformer`), empty otherwise.
    """

    name: str
    layers: tuple[Layer, ...]
    repeats: tuple[int, ...] = field(default=())
    source: str = ""
    vector_ops: tuple[VectorOp, ...] = field(default=())
    vector_repeats: tuple[int, ...] = field(default=())
    workload: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError(f"network {self.name!r} has no layers")
        if not self.repeats:
            object.__setattr__(self, "repeats", tuple(1 for _ in self.layers))
        if len(self.repeats) != len(self.layers):
            raise ValueError(f"network {self.name!r}: {len(self.repeats)} repeats for {len(self.layers)} layers")
        object.__setattr__(self, "vector_ops", tuple(self.vector_ops))
        if not self.vector_repeats:
            object.__setattr__(self, "vector_repeats", tuple(1 for _ in self.vector_ops))
        object.__setattr__(self, "vector_repeats", tuple(self.vector_repeats))
        if len(self.vector_repeats) != len(self.vector_ops):
            raise ValueError(f"network {self.name!r}: {len(self.vector_repeats)} vector repeats for "
                             f"{len(self.vector_ops)} vector ops")
        for r in self.repeats + self.vector_repeats:
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
        return Network(self.name, tuple(layers), tuple(reps), self.source, self.vector_ops,
                       self.vector_repeats, self.workload)

