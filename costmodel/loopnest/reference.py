"""The reference loop-nest cost model: energy (pJ), latency (cycles) and EDP of one mapping.

Readable, scalar and exact (Python integers for all counts). `costmodel.loopnest.ordering` computes the same
numbers vectorised over many loop orderings; `tests/loopnest_oracle.py` walks the hardware
literally (what each PE touches, real data only) and
`tests/costmodel/loopnest/test_loopnest_oracle.py` holds every count equal to the walk's, or,
where the model follows a convention (marked *Convention* below, with its source), in the
relation stated there.

The model (after ZigZag, Mei et al., IEEE TC 2021, and LOMA, Symons et al., AICAS 2021), with
every assumption:

**Loop nest.** Temporal loops innermost first, ``loops[0..n)``; spatial loops (the fitted
unrolling, `SpatialMapping.fit`) sit below all temporal loops: the spatial index of a dim is its
lowest digit (OY 2 over two PEs, OY 2 temporal: PE p computes output rows p and p + 2). Temporal
loops of factor 1 are ignored everywhere.

**Unrolling that does not divide the layer (real data, active PEs).** A spatial factor s_d (the
product of d's fitted spatial factors) with s_d x ceil(D_d / s_d) = P_d > D_d pads dimension d:
the nest runs P_d indices of which D_d are real. Tiles, capacities, loads per instance (``fills``,
``readbacks``) and compute cycles are those of the padded nest (a padded temporal loop still costs
its cycles; a memory must hold a full slice). Access counts are of the real data and the active
PEs only, the fractional unrolling of ZigZag (s_d counts as D_d / ceil(D_d / s_d)): a count of
operand op at a memory is the padded count times the product of D_d / P_d over the padded dims d
that are relevant to op (its data is D_d / P_d real) or carried by an array dim the memory is
private to (only D_d / P_d of its instances along that dim work; the MAC side is private to every
array dim). Exception, I's sliding window: a padded window dim d (OY, FY, OX, FX) whose spatial
loop lies inside the moved tile (a carrier array dim the lower level of the transfer is not
private to) does not scale the count; it scales its extent in the window instead (ZigZag's
fractional spatial factor D_d / ceil(D_d / s_d)): the count is multiplied by (rows' x columns') /
(rows x columns), rows = `window_rows` of the tile's extents, rows' the same
with each such extent times D_d / P_d (`window_share`); the fills of that level and the reads
above it get this share (the tile is the lower level's). The input's footprint is affine, not
linear, in FY: conv1 of ResNet-18 on eyeriss_like (FY 7 over 3 PEs: 9 padded) needs
3 x 229 x 229 = 157323 inputs, the padded nest spans 3 x 231 x 229, and the count share 7/9 would
move 123431 (less than the input; -21.5 % of the DRAM and global-buffer I traffic, -0.52 % of
conv1's energy); the window share moves 157323 (ZigZag's count). This is a share, not a per-PE
trace: it is exact for the totals of accesses made at every MAC (with no accumulator the O
writes at the lowest O level add up to the real MACs) and for the data volume of op-relevant dims
(every padded index is moved equally often, so real data is D_d / P_d of it, or, for a window dim
inside the tile, its blocks hold on average D_d / P_d of their indices real and the window is
affine in them, before the rounding of a transfer to whole words); a load or read-back whose idle
slice falls at one end of a reuse run is counted in the same average share (as ZigZag's fractional
unrolling), not per PE. *Convention* (ZigZag's fractional unrolling), against the per-PE count in
elements: equal where every padded dim is relevant to the operand (for I, padded window dims at
stride = dilation, where the rows are affine in the extents); at most the per-PE count for W, and
for I without a padded window dim (an idle slice inside a reuse run still costs its PE the whole
load); either side otherwise (an O read-back skipped by an idle last visit is still counted).
Scaled counts are floats; MAC energy counts the layer's real MACs.
Differences from ZigZag that remain (ours the more physical): ZigZag rounds the active PEs up to a
whole number per operand and level (``unit_count``: 131 on conv1 for 168 x 7/9 = 130.67 active on
average), so its MAC-side register accesses exceed the real MACs (conv1: 131 x 903168 =
118315008 I and O register reads for 118013952 MACs; +0.18 % of conv1's energy); and its distinct
data per multicast group of I and W (``unit_unique``; conv1: I 28 PEs' tiles, ours the 42 PE tiles of
the OX 14 x FY 3 positions times 7/9) differs from ours by 0.03 % of conv1's energy (ours higher).
ZigZag truncates fractional loop sizes to integers before an input extent (``calc_tensor_dim``):
OX 14 over 4 PEs is 3.5 in its output tile but 3 in its input tile, so its array-side input reads
are ours x (6/7)^2 on such layers (edge_tpu_like layer3 / layer4: +2.33 % of the network ours;
docs/zigzag.md, "Every accelerator ZigZag ships").

**Levels and scope.** Operand op has levels ``arch.levels(op)`` (innermost first); level l holds the
loops ``loops[0, b_l)`` (``b = mapping.boundaries[op]``). A memory is replicated over the array
dims in its ``private_to`` (instances = product of the spatial factors on those dims); spatial loops
on the other array dims lie *inside* one instance. Below the innermost level sits the MAC, which
keeps its current W and I operand (a virtual level holding one element, private to all array
dims, boundary 0).

**Accumulation (no free accumulator).** A partial sum lives where the hardware keeps it. Without
an accumulator (`Accelerator.accumulator_pj` None, no ``[accumulator]`` table) the MAC keeps
nothing: after every MAC its partial sum is written to the lowest O level (F = P at the MAC
boundary, every loop counts as a visit) and read back from it before the next accumulation into
the same output, as ZigZag charges one read and one write of the lowest output memory per MAC
per PE (and Eyeriss's energy analysis charges a psum register read and write per MAC). With an
accumulator the MAC holds its partial sum as a one-element O level (F = P / R below, the run of
O-irrelevant loops innermost keeps it) and each real MAC adds ``accumulator_pj``. Two differences
from ZigZag, where ours is the more physical: (a) the first accumulation into an output does not
read an all-zero partial sum back (F - D read-backs, not F; ZigZag reads F); (b) an output that
leaves a level complete (its last visit) is written up at final precision, ZigZag writes every
output up at partial-sum precision. These two carry most of the energy of the O hierarchy when
few temporal reduction loops sit above the innermost O level: on conv1 (ZigZag's own best
mapping; reduction per output C 3 x FX 7 in the registers, FY 3 above, so one visit in three of
rf_16B, sram_8KB and sram_1M is a first visit and one in three a last) (a) is 1.42 % and (b)
0.41 % of ZigZag's energy (model version 4: 1.15e7 and 3.3e6 pJ of 8.109e8: rf_16B, sram_8KB and
sram_1M read-backs of zeros; final outputs moved above rf_16B at 8 instead of 16 bits; rf_16B
itself, under the unfinished FY reduction, is read out at 16 bits as in ZigZag), so our energy of
that mapping is 2.0 % below ZigZag's, all of it from (a), (b) and ZigZag's rounded PE count (see
above); on the other ResNet-18 layers compared (C >= 64, many reduction loops) the energies agree
within 0.3 %.

**Tile** of (op, level): the data footprint of the temporal loops below the boundary plus the
spatial loops inside one instance. W: K*C*FY*FX*G; O: B*K*OY*OX*G; I: B*C*G*IY*IX with IY the input
rows the tile reads, IY = min(SY*(OY_t-1) + DY*(FY_t-1) + 1, OY_t*FY_t) (`window_rows`; SY, DY
divided by their gcd), IX alike, OY_t etc. the products of all factors of that dim inside the tile:
the window's span, or, where the filter rows of successive outputs do not meet, only the rows read
(a 1x1 convolution at stride 2 over OY_t = 28 reads 28 rows, not the 55 of its span, as ZigZag
counts; before model version 3 the span was counted). Exact when SY or DY (divided by their gcd) is
1, or OY_t <= DY or FY_t <= SY (no row is read twice); otherwise an upper bound (SY=2, DY=3,
OY_t=4, FY_t=3: rows 2 oy + 3 fy take 11 values, counted 12). *Convention* (ZigZag's tile size
from its loop sizes): the rows are those of the extents, as if the tile's output and filter
indices were consecutive; a per-PE tile of a window dim unrolled over the PEs whose temporal loops
are also in the tile holds indices s apart (OY 2 over 2 PEs, OY 2 and FY 3 in the register: a PE
reads rows {0, 2} + {0, 1, 2}, 5, counted 4; at DY=2 with FY 2 it reads 3, counted 4): both lie
between OY_t + FY_t - 1 and OY_t x FY_t. *Convention* (ZigZag's): overlap between successive tiles
is not reused, a new tile is loaded whole.

**Zero padding** (model version 4). A padded convolution's halo is generated as zeros, not stored
or moved: an I tile's rows are at most the rows of real input the whole layer reads, ry =
min(IY - floor(PY), in_rows) (`window_caps`; ``in_rows`` the unpadded input from the zoo file or
the ONNX graph), columns alike, at every level, capacity included (a layer without ``in_rows``
keeps the padded window). The MACs that multiply a zero still run (compute cycles and MAC energy
are the layer's). *Convention* (ZigZag's ``calc_tensor_dim``, which clips every input extent to
the layer's unpadded input): the clip is to the whole input, not per tile position: a tile smaller
than the input whose window reaches into the halo (an edge tile) counts its whole window, the
walk only its real rows (a 3 x 3 "same" convolution with one output row per tile: the first and
last tiles read 2 real rows of 3): model >= walk; equal where every tile spans the whole input
along that axis or none meets the halo. Tile bits =
elements x precision; O tiles are at partial-sum precision if an O-irrelevant (C, FY, FX) temporal
loop lies above the level or an O-irrelevant spatial loop is on an array dim the level is private
to (not yet reduced), else at final precision (ZigZag's rule): what the memory holds between
passes of its own loops is partial while it still lacks the iterations of a loop above or the MACs
of PEs outside the instance (their sum completes above it). *Convention* (ZigZag's psum_flag looks
at the loops above the level only): partial values that exist only while the level's own loops run
count at final precision, though without an accumulator every MAC's partial sum is written into
the lowest O level (C 4 in rO: 3 partial sums before the final one; held, they need the partial
precision). Precisions: the accelerator's
``precisions`` (W, I, O, O_final) where given, else the layer's (w_bits, i_bits, o_partial_bits,
o_bits).

**Fills / visits (stationarity).** Across the boundary between a level (or the MAC) and the level
above, a tile is loaded whenever the index of an op-relevant loop above the boundary changes. Let P
be the product of the loop factors above the boundary and R that of the run of consecutive
op-irrelevant loops directly above it: the tile is loaded F = P / R times (the run keeps it
stationary). For I, partially relevant dims (OY, OX, FY, FX) count as relevant. At the MAC boundary
of O without an accumulator R = 1 (F = P: a visit of the lowest O level per MAC).

**Transfers and multicast.** Per load event every instance of the lower level receives its tile:
writes at the lower level = F x instances_lower x ceil(tile_bits / word_lower). Reads at the upper
level: each upper instance reads the distinct data of its lower instances once; lower instances that
differ only along array dims carrying op-irrelevant loops get the same data (multicast), those along
op-relevant dims different data: reads = F x instances_upper x ceil(tile_elems x g x bits /
word_upper), g = product of the op-relevant spatial factors on the array dims the lower level is
private to and the upper is not. *Convention* (ours; ZigZag's ``unit_unique`` differs, see above; an accelerator may declare
multicast, "Multicast of inputs" below): the g tiles are sent whole, though I tiles of lower instances that differ along OY and FY (or OX
and FX) overlap, so fewer distinct inputs move (model >= the walk's distinct elements). Rounding:
one transfer of a tile (or of a multicast group's distinct data) costs ceil(bits / word_bits)
accesses. The MAC side has no memory: loads into the MAC
cost only the reads of the innermost level (one element per MAC), and a partial sum leaving the
MAC only the write (and read-back) at the innermost O level.

**Outputs.** Every O visit ends with a write of the tile to the level above (spatial reduction: PEs
along O-irrelevant array dims are reduced before the write, so the write carries tile x g distinct
outputs, the same g as above). Of the F visits, D = product of the O-relevant loop factors above the
boundary are first visits (zero-initialised, no read); the other F - D are preceded by a partial-sum
read-back from the level above (read at the upper, written at the lower level, partial precision).
*Convention* (the per-instance count of every transfer): the read-back is written into each lower
instance, also into each of a group reduced together on the way up (O-irrelevant spatial loops on
array dims the lower level is private to and the upper not), though the partial sum enters one of
them (the others start from zero), and each is read back from below (model >= the walk).
The last visit of each tile writes final values (final precision) unless an O-irrelevant spatial
loop is still unreduced above the upper level (then every write is partial); all other writes are
partial. Accesses at the lower level for write-ups are reads, at the upper level writes.
The lower level's reads carry the precision it holds: where an O-irrelevant spatial loop is
unreduced within its scope (each lower instance holds a partial sum of its own PEs, the reduction
on the way up makes the value final), every read is at partial precision (C 2 over 2 PEs with a
per-PE rO: 2 outputs read out at 16 bits, written up reduced at 8; model version 4, the walk's
count; before, at the write's 8 bits).

**Energy** = sum over (operand, level) of reads x read_pj + writes x write_pj, plus MACs x mac_pj
(+ MACs x accumulator_pj with an accumulator).

**Per-operand ports** (`MemoryLevel.port`; after ZigZag 3.9.1, which keeps a bandwidth per operand
and direction, ``hardware/architecture/memory_level.py`` ``MemoryLevel.__allocate_ports``, and
counts and times each with its own port, ``cost_model/cost_model.py`` ``_calc_memory_access`` and
``calculate_real_data_transfer_cycles``). Where a memory gives word_bits, read_bw, write_bw,
read_pj or write_pj per operand, every count and time of operand op at it uses op's: a transfer
costs ceil(bits / word_bits[op]) accesses at the memory it touches (the upper's word for the
reads above, the lower's for the fills below), each at read_pj[op] / write_pj[op], and takes
words x word_bits[op] / bandwidth[op] / instances cycles. Operands share the memory's port(s) as
before (one shared port, or a read and a write port): on one port the times of all operands
add, each at its own width and bandwidth (the port moves one operand's words at a time). ZigZag's
ports of different operands are separate physical ports working in parallel; the importer
therefore keeps the bandwidth of such a memory the sum of its ports (`costmodel.importers.zigzag`).
A 2048-bit O port moving 4 x 512 bits makes 1 access, a 512-bit I port 4. Scalars: the rule is
the one above, unchanged.

**Multicast of inputs** (`Accelerator.multicast`, TOML ``multicast = { I = ["D1", "D2"] }``; opt-in,
for accelerators whose interconnect delivers one read to every PE that needs it: Eyeriss, Chen et
al., ISCA 2016, Sec. IV-V: the multicast NoC, row-stationary inputs reused along the array's
diagonals). With OX on one array dim and FX on another (or OY and FY) the PEs' inputs overlap (OX 4
x FX 3 at stride 1: 12 PEs, 4 + 3 - 1 = 6 distinct inputs a cycle). On a link whose group dims
(lower private, upper not) include multicast dims M of I with an I-relevant spatial factor > 1,
the reads above count the distinct data of the lower instances along M: those of a virtual lower
level private to the lower scope minus M (its tile the union of the tiles along M: extents times
M's spatial factors, `window_rows`; g of the remaining group dims; its real / padded share and
window fractions), F and fills unchanged (`_Nest.multicast`). Along the other group dims the
tiles are sent whole, as above. W and O need no rule (their tiles along relevant dims never
overlap). *Convention*: the union's rows are those of its extents (as "Tile"), a gapped union is
counted as consecutive. ZigZag 3.9.1 has no such key: its distinct units per level are
``unit_unique`` (``mapping/spatial_mapping_internal.py`` ``SpatialMappingInternal.calc_unit_count``,
the product of the relevant unrollings, OX and FX decoupled: ``workload/layer_node.py``
``LoopRelevancyInfo.create_pr_decoupled_relevancy_info``), its input extents truncated (``calc_tensor_dim``, above);
its "diagonal" spatial mapping (``stages/mapping/spatial_mapping_generation.py``
``add_input_pr_spatial_loop``, ``enable_weight_diagonal_mapping``, off by default) resizes the
innermost input memory for weight-stationary OX / OY unrolling, not the count. Without the key
the rule is the one above (same numbers, same ids).

**Capacity.** For each bounded memory the tiles of all operands it holds (per instance) must fit:
sum of tile bits <= size_bits; otherwise the report is invalid (energy, latency, EDP = inf) with the
reason.

**Latency (stall model, per transfer link; after ZigZag 3.9.1, zigzag/cost_model/cost_model.py
``calculate_allowed_transfer_cycles`` and ``combine_data_transfer_rate_per_physical_port``).**
Compute cycles C = product of all temporal loop factors (padding included). Every transfer across
a link (MAC -> level 0, level l -> l+1) is timed at the port of the memory it touches, per
instance of that memory (an upper memory serves all the lower instances below it): t = words x
word_bits / bandwidth / instances (read bandwidth for its reads, write bandwidth for its writes);
the upper memory's reads and writes and the lower memory's fills, read-backs and write-ups are
separate transfers. A memory is double-buffered if it is unbounded or twice its tiles fit (2 x
sum tile bits <= size_bits). A transfer may overlap compute only within its link's window: C if
the link's lower level is the MAC or double-buffered, else C // T, T = the product of the run of
consecutive op-irrelevant loops straddling the boundary (the stationarity run above it times the
op-irrelevant loops at the top of the lower level's own loops): a single-buffered tile can be
replaced only while its data is used for the last time, during the last pass of that run
(ZigZag: the period divided by the top irrelevant loop of the lower level). Transfers on one port
(reads and writes together with a shared port, else the read port and the write port apart) add:
with all windows opening as the period turns over, the transfers due within the k-th window must
fit in it, so stall_port = max(0, max_k (sum of t_j with window_j <= window_k) - window_k)
(`port_stall`); a memory stalls as its worst port, memories work in parallel: latency = C + max_M
stall_M. Differences from ZigZag: (a) ZigZag adds the excesses of the directions, each against its
own window (sum of max(0, t_d - window_d)), so two directions sharing one port and one window get
the window twice; ours gives it once (a port does one transfer at a time), e.g. eyeriss_like's
sram_8KB feeding the full rf_16B of 168 PEs: ZigZag 2 x (56 - 8) cycles per period of conv1,
ours 56 + 56 - 8; (b) ZigZag times per period with whole cycles (ceil) and leaves the first
period out (its on-loading); ours totals the layer's transfers, so the first fill overlaps like
the others, and ZigZag's data on-loading and off-loading (the first tiles before the first MAC,
the last outputs after the last; < 0.2 % on eyeriss_like ResNet-18) are not modelled: ZigZag
waits before the first MAC for every tile a memory loads once (on tpu_like the layer's whole
input into the SRAM: 25,088 cycles on ResNet-18 layer1), though a DMA streaming it in the order
of use needs only the first innermost tile, and the per-link windows already charge a port
that cannot keep up (ours the more physical; docs/zigzag.md); (c) ZigZag
decides double buffering per operand (shared memories split greedily), ours per memory; (d) when
a level's own loops are all op-irrelevant ZigZag's stationary mapping merges them down and takes
the whole period as window, ours keeps T (the tile still dies only in the last pass).
EDP = energy (pJ) x latency (cycles).

**AccelForge conventions** (AccelForge 1.0.467, the Timeloop / Accelergy line; measured in
docs/accelforge.md, pinned in tests/data/accelforge/). With our energies per action, AccelForge
costs our mappings per (operand, memory) as our counts predict once four conventions are swapped:
(a) our MAC keeps its W and I operand across the innermost run of operand-irrelevant loops (loads
into the MAC F = P / R, `_boundary_accesses`); AccelForge reads each operand per MAC
(``analyze_compute``). (b) A transfer costs ceil(bits / word_bits) accesses here, bits /
bits_per_action unrounded there (a 16-bit partial sum in a 24-bit word: 2/3). (c) Outputs move at
O_final when complete and at O as partial sums here; one precision per (tensor, memory) there.
(d) A tile stays across operand-irrelevant loops directly above its boundary here; a LoopTree
storage node is refilled on every iteration of every loop above it. Where none applies (DRAM, the
MACs, eyeriss_like's input register) the energies are equal. Latency: ours adds the stalls of
transfers that miss their window; AccelForge takes its slowest component, all overlapped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


from .mapping import OPERANDS, RELEVANT, Mapping, MappingError, SpatialMapping
from .window import WINDOW, footprint, window_caps, window_rows, window_share, window_steps  # noqa: F401 (re-exported)
from costmodel.workload import LOOP_DIMS

__all__ = ["evaluate", "CostReport", "LevelCost", "footprint", "operand_bits", "window_rows", "window_steps",
           "MODEL_VERSION"]

#: Version of the loop-nest physics (this module's rules, shared by every fast path). Bump it when
#: a rule changes a number: it is part of every loop-nest problem_id and campaign config hash, so
#: rows of two models never mix in one result directory. 2: no free accumulator in the MAC
#: (``[accumulator]``), fractional unrolling counts the active PEs and the real data. 3: an input tile
#: counts the rows it reads, not its window's span (strided 1x1 convolutions, `window_rows`).
#: 4: zero padding is not moved, an input tile is clipped to the real input (`window_caps`); a lower
#: O level whose spatial reduction is unfinished is read out at partial precision (its own).
MODEL_VERSION = 4


@dataclass
class LevelCost:
    """Accesses of one operand at one memory level (counts are word accesses, energy pJ).

    ``fills`` = loads of this level's tile from the level above (W, I) or O visits; ``readbacks``
    = O partial-sum read-backs into this level (0 for W, I); ``tile_elems`` / ``tile_bits`` per
    instance; ``instances`` = copies of the memory in use.
    """

    operand: str
    memory: str
    reads: int = 0
    writes: int = 0
    fills: int = 0
    readbacks: int = 0
    energy_pj: float = 0.0
    tile_elems: int = 0
    tile_bits: int = 0
    instances: int = 1

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CostReport:
    """The cost of one mapping.

    energy_pj (pJ), latency_cycles (cycles), edp (pJ x cycles), valid / reason (why invalid),
    breakdown: per operand a list of `LevelCost` dicts (innermost level first), ``mac_energy_pj``,
    ``macs``, ``compute_cycles``, ``stall_cycles`` (memory -> cycles), ``utilization`` (real MACs /
    (compute cycles x PEs)).
    """

    energy_pj: float
    latency_cycles: float
    edp: float
    valid: bool
    reason: str = ""
    breakdown: dict[str, Any] = field(default_factory=dict)
    mapping: Mapping | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the mapping via `Mapping.to_dict`)."""
        def clean(x):
            if isinstance(x, float) and not math.isfinite(x):
                return None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, list):
                return [clean(v) for v in x]
            return x
        return {"energy_pj": clean(self.energy_pj), "latency_cycles": clean(self.latency_cycles),
                "edp": clean(self.edp), "valid": self.valid, "reason": self.reason,
                "breakdown": clean(self.breakdown),
                "mapping": self.mapping.to_dict() if self.mapping is not None else None}


def operand_bits(layer, arch) -> dict[str, int]:
    """Precisions in bits: W, I, O (partial sums), O_final; the accelerator's ``[precision]``
    where given, except for the operands the layer fixes (``layer.fixed_bits``: a transformer
    workload's ``weight_bits`` / ``act_bits`` / ``kv_bits``, `costmodel.transformer`). A W
    operand that is the KV cache (``layer.w_role == "kv_cache"``) is an activation: unless fixed,
    it takes the accelerator's I precision (else the layer's ``i_bits``), not its weight precision."""
    p, fixed = arch.precisions, layer.fixed_bits
    if "W" in fixed:
        w = layer.w_bits
    elif layer.w_role == "kv_cache":
        w = layer.i_bits if "I" in fixed else p.get("I", layer.i_bits)
    else:
        w = p.get("W", layer.w_bits)
    return {"W": w, "I": layer.i_bits if "I" in fixed else p.get("I", layer.i_bits),
            "O": p.get("O", layer.o_partial_bits),
            "O_final": layer.o_bits if "O_final" in fixed else p.get("O_final", layer.o_bits)}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class _Nest:
    """Derived quantities of (layer, arch, fitted spatial, loops) shared by the model's parts."""

    def __init__(self, layer, arch, spatial: SpatialMapping, loops):
        self.layer, self.arch = layer, arch
        self.sp = spatial
        self.loops = [(d, f) for d, f in loops]
        self.all_dims = tuple(arch.array)
        # per array dim: {loop dim: factor}
        self.on: dict[str, dict[str, int]] = {a: {} for a in arch.array}
        for a, sl in spatial.dims.items():
            for d, f in sl:
                self.on[a][d] = self.on[a].get(d, 1) * f
        # padded dims (non-divisible unrolling): d -> (real bound D, padded extent s x ceil(D / s)),
        # and the array dims carrying a spatial factor > 1 of d
        self.pad: dict[str, tuple[int, int]] = {}
        self.carriers: dict[str, tuple[str, ...]] = {}
        for d in LOOP_DIMS:
            s = spatial.factor(d)
            D = getattr(layer, d)
            if s > 1 and s * _cdiv(D, s) > D:
                self.pad[d] = (D, s * _cdiv(D, s))
                self.carriers[d] = tuple(a for a in self.all_dims if self.on[a].get(d, 1) > 1)

    def instances(self, scope) -> int:
        return math.prod(f for a in scope for f in self.on[a].values())

    def spatial_ext(self, dims) -> dict[str, int]:
        ext: dict[str, int] = {}
        for a in dims:
            for d, f in self.on[a].items():
                ext[d] = ext.get(d, 1) * f
        return ext

    def group(self, op: str, dims) -> int:
        """Product of op-relevant spatial factors on array dims ``dims``."""
        rel = RELEVANT[op]
        return math.prod(f for a in dims for d, f in self.on[a].items() if d in rel)

    def real_scale(self, op: str, scope, exclude=()) -> float:
        """Real / padded share of a count of ``op`` whose instances are those of ``scope``: the
        product of D_d / (s_d x ceil(D_d / s_d)) over the padded dims d that are relevant to ``op``
        or carried by an array dim in ``scope`` (1.0 without padding), leaving out the dims in
        ``exclude`` (I's window dims unrolled inside the moved tile, `window_frac`). The fast paths
        use this very float, so all paths scale identically."""
        x = 1.0
        rel = RELEVANT[op]
        for d, (D, P) in self.pad.items():
            if d in exclude:
                continue
            if d in rel or any(a in scope for a in self.carriers[d]):
                x *= D / P
        return x

    def window_frac(self, op: str, scope) -> dict[str, float]:
        """For I: {d: D_d / P_d} of the padded window dims (OY, FY, OX, FX) with a spatial loop
        inside one instance of ``scope`` (a carrier array dim not in ``scope``): their real share
        enters the tile's sliding window as a fractional extent (`window_share`), not as a factor
        of the count. Empty for W and O (their footprints are products: the factor is exact)."""
        if op != "I":
            return {}
        return {d: D / P for d, (D, P) in self.pad.items()
                if d in WINDOW and any(a not in scope for a in self.carriers[d])}

    def window_share(self, ext: dict[str, int], a: dict[str, float]) -> float:
        """Real / padded share of one I tile with per-dim extents ``ext`` (spatial inside the
        instance x temporal) whose window dims d in ``a`` are unrolled fractionally: the rows
        `window_rows` of OY a_OY and FY a_FY times the columns alike, over the padded ones.
        1.0 if ``a`` is empty. The fast paths do the same float operations in the same order."""
        if not a:
            return 1.0
        return window_share(*window_steps(self.layer), *window_caps(self.layer), ext.get("OY", 1), ext.get("FY", 1), ext.get("OX", 1),
                            ext.get("FX", 1),
                            a.get("OY", 1.0), a.get("FY", 1.0), a.get("OX", 1.0), a.get("FX", 1.0))

    def multicast_scope(self, op: str, lo_scope, up_scope):
        """``lo_scope`` minus the accelerator's multicast dims of ``op`` that are not in
        ``up_scope``, or None if those carry no op-relevant spatial factor > 1."""
        M = [a for a in self.arch.multicast_dims(op) if a in lo_scope and a not in up_scope]
        return None if self.group(op, M) == 1 else [a for a in lo_scope if a not in M]

    def multicast(self, op: str, lo_scope, up_scope, bl: int):
        """(tile elements, group g, share) of the reads above a link whose lower instances (scope
        ``lo_scope``, holding ``loops[0, bl)``) receive ``op`` by multicast along the accelerator's
        multicast dims M among the group's array dims (in ``lo_scope``, not in ``up_scope``): the
        reads of a virtual lower level private to ``lo_scope`` minus M (its tile the union of the
        tiles along M). None if M carries no op-relevant spatial factor (the rule changes nothing)."""
        scope = self.multicast_scope(op, lo_scope, up_scope)
        if scope is None:
            return None
        ext = self.spatial_ext([a for a in self.all_dims if a not in scope])
        for d, f in self.loops[:bl]:
            ext[d] = ext.get(d, 1) * f
        wf = self.window_frac(op, scope)
        s = self.real_scale(op, up_scope, wf)
        if wf:
            s = s * self.window_share(ext, wf)
        return footprint(op, ext, self.layer), self.group(op, [a for a in scope if a not in up_scope]), s

    def unreduced(self, scope) -> bool:
        """An O-irrelevant spatial loop (factor > 1) on an array dim in ``scope``."""
        rel = RELEVANT["O"]
        return any(f > 1 and d not in rel for a in scope for d, f in self.on[a].items())

    def tile(self, op: str, b: int, scope) -> int:
        ext = self.spatial_ext([a for a in self.all_dims if a not in scope])
        for d, f in self.loops[:b]:
            ext[d] = ext.get(d, 1) * f
        return footprint(op, ext, self.layer)

    def above(self, op: str, b: int) -> tuple[int, int, int]:
        """(P, R, D) of the loops above boundary b: product, leading irrelevant run, relevant product."""
        rel = RELEVANT[op]
        P = R = D = 1
        in_run = True
        for d, f in self.loops[b:]:
            if f == 1:
                continue
            P *= f
            if d in rel:
                D *= f
                in_run = False
            elif in_run:
                R *= f
        return P, R, D

    def top_ir(self, op: str, b: int, b_lo: int) -> int:
        """T of the transfer link at boundary ``b`` whose lower level holds ``loops[b_lo, b)``: the
        product of the run of consecutive op-irrelevant loops (factor > 1) straddling ``b``: the
        run directly above ``b`` (the stationarity run R) times the run at the top of the lower
        level's own loops, down to its first op-relevant loop (ZigZag's top irrelevant loop of the
        lower level in its stationary mapping)."""
        rel = RELEVANT[op]
        T = 1
        for d, f in self.loops[b:]:
            if f == 1:
                continue
            if d in rel:
                break
            T *= f
        for d, f in reversed(self.loops[b_lo:b]):
            if f == 1:
                continue
            if d in rel:
                break
            T *= f
        return T

    def o_partial_above(self, b: int) -> bool:
        rel = RELEVANT["O"]
        return any(f > 1 and d not in rel for d, f in self.loops[b:])


def evaluate(layer, arch, mapping: Mapping) -> CostReport:
    """Energy, latency and EDP of ``mapping`` of ``layer`` on ``arch`` (see the module docstring).

    Args:
        layer: `costmodel.workload.Layer`.
        arch: `costmodel.loopnest.arch.Accelerator`.
        mapping: `Mapping` (boundaries per operand, or per memory name: resolved against ``arch``).

    Returns:
        `CostReport`; invalid (inf costs, ``reason`` set) if the mapping is structurally wrong
        (`Mapping.check`) or a memory's capacity is exceeded. A layer that keeps operands on chip
        (``layer.onchip``) is evaluated on ``arch.for_layer(layer)``.
    """
    inf = math.inf
    arch = arch.for_layer(layer)
    try:
        mapping = mapping.resolve(arch)
        mapping.check(layer, arch)
    except MappingError as e:
        return CostReport(inf, inf, inf, False, str(e), {}, mapping)
    sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
    nest = _Nest(layer, arch, sp, mapping.temporal.loops)
    bits = operand_bits(layer, arch)

    per_op: dict[str, list[LevelCost]] = {}
    mem_tile_bits: dict[str, int] = {m.name: 0 for m in arch.memories}
    transfers: list[tuple] = []
    for op in OPERANDS:
        levels = arch.levels(op)
        b = mapping.boundaries[op]
        costs = _level_tiles(nest, op, levels, b, bits, mem_tile_bits)
        _boundary_accesses(nest, op, levels, b, bits, costs, transfers)
        for c, m in zip(costs, levels):
            pt = m.port(op)
            c.energy_pj = c.reads * pt.read_pj + c.writes * pt.write_pj
        per_op[op] = costs

    reason = _capacity_violation(arch, per_op, mem_tile_bits)
    if reason:
        return CostReport(inf, inf, inf, False, reason,
                          {"operands": {op: [c.to_dict() for c in per_op[op]] for op in OPERANDS}}, mapping)

    mac_e = mac_energy(layer, arch)
    energy = mac_e + sum(c.energy_pj for op in OPERANDS for c in per_op[op])

    compute = math.prod(f for _, f in nest.loops)
    stalls = _stalls(nest, arch, transfers, mem_tile_bits, compute)
    latency = compute + max(stalls.values())
    breakdown = {
        "operands": {op: [c.to_dict() for c in per_op[op]] for op in OPERANDS},
        "macs": layer.macs, "mac_energy_pj": mac_e,
        "accumulator_energy_pj": 0.0 if arch.accumulator_pj is None else layer.macs * arch.accumulator_pj,
        "compute_cycles": compute, "stall_cycles": stalls,
        "utilization": layer.macs / (compute * arch.pe_count),
    }
    return CostReport(energy, latency, energy * latency, True, "", breakdown, mapping)


def mac_energy(layer, arch) -> float:
    """Energy of the layer's real MACs (pJ), including the accumulations in the MAC's accumulator
    if the accelerator declares one: macs x mac_pj (+ macs x accumulator_pj)."""
    e = layer.macs * arch.mac_pj
    if arch.accumulator_pj is not None:
        e = e + layer.macs * arch.accumulator_pj
    return e


def _level_tiles(nest: _Nest, op: str, levels, b, bits: dict[str, int],
                 mem_tile_bits: dict[str, int]) -> list[LevelCost]:
    """One `LevelCost` per level of ``op`` (innermost first) with its tile (elements and bits per
    instance; O at partial precision while an O-irrelevant loop is above or unreduced) and instance
    count; adds the tile bits to ``mem_tile_bits`` (memory name -> bits held per instance)."""
    costs = []
    for m, bl in zip(levels, b):
        te = nest.tile(op, bl, m.private_to)
        if op == "O":
            pb = bits["O"] if (nest.o_partial_above(bl) or nest.unreduced(m.private_to)) else bits["O_final"]
        else:
            pb = bits[op]
        costs.append(LevelCost(op, m.name, tile_elems=te, tile_bits=te * pb,
                               instances=nest.instances(m.private_to)))
        mem_tile_bits[m.name] += te * pb
    return costs


def _boundary_accesses(nest: _Nest, op: str, levels, b, bits: dict[str, int], costs: list[LevelCost],
                       transfers: list) -> None:
    """Word accesses across each boundary of ``op`` (MAC (-1) -> level 0, level l -> l+1).

    F = P / R tile loads per boundary (stationarity). W, I: F x instances x ceil(tile bits / word)
    writes below (fills), multicast reads above. O: D first visits, F - D partial-sum read-backs,
    write-ups final (when reduced) or partial. Adds to the reads / writes / fills / readbacks of
    ``costs`` and appends every transfer of the link to ``transfers`` for the stall model:
    (memory name, is a write, words, lower level's memory name or None for the MAC, T of the link
    (`_Nest.top_ir`), operand), per boundary in the order W/I: upper read, lower write; O: upper write,
    upper read, lower read, lower write.
    """
    acc = nest.arch.accumulator_pj is not None
    for lo in range(-1, len(levels) - 1):
        up = levels[lo + 1]
        lo_scope = nest.all_dims if lo < 0 else levels[lo].private_to
        bl = 0 if lo < 0 else b[lo]
        te = 1 if lo < 0 else costs[lo].tile_elems
        g = nest.group(op, [a for a in lo_scope if a not in up.private_to])
        n_up = nest.instances(up.private_to)
        n_lo = nest.instances(lo_scope)
        # I's window dims unrolled inside the moved tile: a fractional window, not a factor
        wf = nest.window_frac(op, lo_scope)
        s_up = nest.real_scale(op, up.private_to, wf)
        s_lo = nest.real_scale(op, lo_scope, wf)
        if wf:
            ext = nest.spatial_ext([a for a in nest.all_dims if a not in lo_scope])
            for d, f in nest.loops[:bl]:
                ext[d] = ext.get(d, 1) * f
            w = nest.window_share(ext, wf)
            s_up, s_lo = s_up * w, s_lo * w
        P, R, D = nest.above(op, bl)
        # no accumulator in the MAC: every MAC's partial sum goes to the lowest O level (R = 1)
        F = P if (op == "O" and lo < 0 and not acc) else P // R
        cu = costs[lo + 1]
        lo_name = None if lo < 0 else levels[lo].name
        T = 1 if lo < 0 else nest.top_ir(op, bl, 0 if lo == 0 else b[lo - 1])
        if lo >= 0:
            costs[lo].fills = F
        wu_b = up.port(op).word_bits   # per-operand ports: the operand's own word at either memory
        if op != "O":
            mc = nest.multicast(op, lo_scope, up.private_to, bl)
            tu, gu, su = (te, g, s_up) if mc is None else mc   # "Multicast of inputs": the distinct data
            rd = _real(F * n_up * _cdiv(tu * gu * bits[op], wu_b), su)
            cu.reads += rd
            transfers.append((up.name, False, rd, lo_name, T, op))
            if lo >= 0:
                wr = _real(F * n_lo * _cdiv(te * bits[op], levels[lo].port(op).word_bits), s_lo)
                costs[lo].writes += wr
                transfers.append((lo_name, True, wr, lo_name, T, op))
            continue
        fin = 0 if nest.unreduced(up.private_to) else D
        part = F - fin
        rb = F - D
        wu = _real(n_up * (fin * _cdiv(te * g * bits["O_final"], wu_b)
                           + part * _cdiv(te * g * bits["O"], wu_b)), s_up)
        ru = _real(rb * n_up * _cdiv(te * g * bits["O"], wu_b), s_up)
        cu.writes += wu
        cu.reads += ru
        transfers.append((up.name, True, wu, lo_name, T, op))
        transfers.append((up.name, False, ru, lo_name, T, op))
        if lo >= 0:
            wl = levels[lo].port(op).word_bits
            # read out at the precision the lower level holds: partial while its spatial reduction is unfinished
            fin_lo = 0 if nest.unreduced(lo_scope) else fin
            rl = _real(n_lo * (fin_lo * _cdiv(te * bits["O_final"], wl) + (F - fin_lo) * _cdiv(te * bits["O"], wl)),
                       s_lo)
            wr = _real(rb * n_lo * _cdiv(te * bits["O"], wl), s_lo)
            costs[lo].reads += rl
            costs[lo].writes += wr
            costs[lo].readbacks = rb
            transfers.append((lo_name, False, rl, lo_name, T, op))
            transfers.append((lo_name, True, wr, lo_name, T, op))


def _real(count: int, scale: float):
    """A padded-nest access count scaled to the real data and active instances (int if 1.0)."""
    return count if scale == 1.0 else count * scale


def _capacity_violation(arch, per_op: dict[str, list[LevelCost]], mem_tile_bits: dict[str, int]) -> str:
    """The reason of the first bounded memory whose tiles (bits per instance) exceed its size, or
    "" if every memory holds its tiles."""
    for m in arch.memories:
        if m.size_bits is not None and mem_tile_bits[m.name] > m.size_bits:
            detail = ", ".join(f"{c.operand}: {c.tile_bits}" for op in OPERANDS for c in per_op[op]
                               if c.memory == m.name)
            return (f"capacity exceeded at {m.name}: tiles need {mem_tile_bits[m.name]} bits "
                    f"> {m.size_bits} ({detail})")
    return ""


def _stalls(nest: _Nest, arch, transfers: list, mem_tile_bits: dict[str, int], compute: int) -> dict[str, float]:
    """Stall cycles per memory name (the module docstring's stall model): every transfer of
    ``transfers`` (`_boundary_accesses`) takes words x word_bits / bandwidth / instances cycles
    (its operand's, `MemoryLevel.port`) at its memory's port within the window of its link (``compute`` if the link's lower level is
    the MAC or double-buffered, else compute // T); per port the stall is the largest excess
    `port_stall` of the transfers whose windows lie within one window; a memory stalls as its
    worst port."""
    db = {m.name: m.size_bits is None or 2 * mem_tile_bits[m.name] <= m.size_bits for m in arch.memories}
    stalls: dict[str, float] = {}
    for m in arch.memories:
        n_inst = nest.instances(m.private_to)
        s = 0.0
        for port in ((None,) if m.shared_port else (False, True)):
            ts, ws = [], []
            for name, is_w, words, lo, T, op in transfers:
                if name != m.name or (port is not None and is_w != port):
                    continue
                pt = m.port(op)
                ts.append(words * pt.word_bits / (pt.write_bw if is_w else pt.read_bw) / n_inst)
                ws.append(compute if lo is None or db[lo] else compute // T)
            s = port_stall(ts, ws, s)
        stalls[m.name] = s
    return stalls


def port_stall(ts, ws, s: float = 0.0) -> float:
    """max(s, max_k (sum of ts[j] over j with ws[j] <= ws[k], in order) - ws[k]): the stall of one
    port whose transfers take ts[j] cycles within windows of ws[j] cycles (all windows open as the
    period turns over, so the transfers due within the k-th window must fit in it); the kernel
    (`kernel._latency`) adds the same floats in the same order. Each distinct window
    is summed once: equal windows give equal sums, and the running maximum, which only a strictly
    larger excess replaces, does not depend on the order of the windows."""
    for wk in dict.fromkeys(ws):
        acc = 0.0
        for tj, wj in zip(ts, ws):
            if wj <= wk:
                acc += tj
        x = acc - wk
        if x > s:
            s = x
    return s
