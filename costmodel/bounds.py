"""Lower bounds no mapping can beat: a layer's and a transformer step's least latency (cycles) and
least energy (pJ) on a loop-nest accelerator, computed without mapping anything.

What an architecture search prunes on (`sweep.search.grid`): a design whose bounds are already
beaten by designs it has mapped cannot be on a front, so it need not be mapped. A bound is only
useful if it is a true bound of *this* model, so each term below is a term of the model's own
latency and energy (`costmodel.loopnest.reference`, module docstring) that no mapping removes:

* **compute**: the model's latency is C + max over memories of the stall, C the product of the
  temporal loop factors (padding included), so latency >= C >= MACs / PEs (every PE busy);
* **DRAM**: a memory's stall on a port is at least the sum of the port's transfer times minus the
  window C they may hide in, so latency >= the DRAM port's transfer time; no mapping moves less
  than the compulsory traffic (`costmodel.roofline.compulsory_bytes`: every weight and input
  element the DRAM serves read once, every output written once at its final precision; the
  operands a fused tile keeps on chip, `Accelerator.for_layer`, are not the DRAM's), so with one
  port shared by reads and writes (the DRAM of a kind, `costmodel.tech.dram`) latency >=
  (reads + writes) / bandwidth, with two ports the larger of reads / read bandwidth and writes /
  write bandwidth;
* **every memory port** (`port_floor`): each element of an operand crosses every level of its
  hierarchy, so each level's port moves at least the operand's footprint per direction it serves
  (filled from above and read towards the MAC; outputs written from below and read up), and the
  latency is at least that port's transfer time (the stall argument above, on any memory): a
  16 MiB buffer at one word per cycle bounds a tile that reads and writes it, whatever the DRAM;
* **the DRAM's re-reads** (`costmodel.traffic.dram_floor`, matmul-shaped layers): an operand
  whose reuse the on-chip capacities cannot hold crosses the DRAM more than once; the least such
  traffic over every loop order the capacities allow (a relaxation of the model's own fetch
  counts, derived there) replaces the compulsory traffic when larger;
* **energy**: MACs x (mac_pj + accumulator_pj) plus the compulsory DRAM bits at the DRAM's energy
  per bit (read_pj / word_bits for reads, write_pj / word_bits for writes: a whole word is
  charged for part of one, so the true count is at least this); every other access costs >= 0;
* **compute, with the unrolling**: C = the product over loop dims of ceil(bound / spatial factor) =
  MACs / (PEs x utilization) for the unrolling the mapping runs, so with the best utilisation any
  unrolling the mapper may run reaches (``utilization``, from the spatial candidates: the sweep
  side, `sweep.search.bounds`), latency >= MACs / (PEs x that utilisation);
* **a step** (`step_bounds`): the array runs its matmuls one after another and a vector operation
  either runs alone or beside matmuls, adding what it takes beyond them (`costmodel.llm.step_latency`:
  an increasing function of each matmul's latency), so that formula on the matmuls' bounds bounds
  the step, plus the fixed launch cost; its energy = the matmuls' + the vector operations' (exact,
  `costmodel.vector`), so >= the matmuls' bounds + the vector energy.

Checked against the mapped figures of every layer and step of a sample of the bundled LLM search's
designs (tests/costmodel/test_bounds.py: bound <= mapped, always), against an exhaustive search of
a small matmul, by hand on two layers, and on every mapped design of the bundled grid (0 of 2,172
designs x 11 figures above their mapped values; docs/archsearch.md).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
import math
from typing import Any

from costmodel.loopnest.reference import operand_bits
from costmodel.loopnest.window import footprint
from costmodel.traffic import dram_floor

__all__ = ["LayerBound", "layer_bound", "port_floor", "step_bounds"]


@dataclass(frozen=True)
class LayerBound:
    """The least latency (cycles) and energy (pJ) of one execution of a layer on an accelerator,
    and which term sets the latency (``"compute"`` or ``"dram"``)."""

    latency_cycles: float
    energy_pj: float
    bound_by: str


def layer_bound(layer, arch, utilization: float = 1.0) -> LayerBound:
    """The bound of one execution of ``layer`` (`costmodel.workload.Layer`) on ``arch`` (a loop-nest
    `Accelerator` whose outermost memory is its DRAM), module docstring. ``utilization``: the
    highest share of the PEs any unrolling the mapper may run keeps busy (MACs / (PEs x temporal
    iterations), `mappers.spatial.utilization`; 1 = every PE), which raises the compute term to
    MACs / (PEs x utilization).

    Raises:
        ValueError: the layer keeps an operand on chip that no memory below the DRAM serves
            (`Accelerator.for_layer`).
    """
    port, where, energy, dram_top, view = _memory_floor(layer, arch)
    compute = layer.macs / (view.pe_count * utilization) * (1 - 1e-12)  # C is an integer >= this
    if compute >= port:
        return LayerBound(max(compute, port), energy, "compute")
    return LayerBound(port, energy, "dram" if where is dram_top else where.name)


_FLOORS: OrderedDict = OrderedDict()
_FLOORS_SIZE = 1024


def _memory_floor(layer, arch):
    """What `layer_bound` does not take from the utilisation: (the busiest port's least time or the
    DRAM re-reads, cycles; its memory; the energy bound, pJ; the DRAM memory if the top level is
    one (else None); the layer's view of ``arch``), kept per (layer, accelerator) for the candidates
    of one layer (an LRU of `_FLOORS_SIZE`, holding the accelerator)."""
    try:
        key = (layer, id(arch))
        hit = _FLOORS.get(key)
    except TypeError:   # an unhashable layer: nothing kept
        key, hit = None, None
    if hit is not None and hit[0] is arch:
        _FLOORS.move_to_end(key)
        return hit[1]
    view = arch.for_layer(layer)
    top = view.memories[-1]
    bits = operand_bits(layer, view)
    prec = {"W": bits["W"], "I": bits["I"], "O": min(bits["O"], bits["O_final"])}
    dims = layer.dims()
    served = [op for op in ("W", "I", "O") if top.size_bits is None and view.levels(op)[-1] is top]
    reads = sum(footprint(op, dims, layer) * prec[op] for op in served if op != "O")
    writes = footprint("O", dims, layer) * prec["O"] if "O" in served else 0
    port, where = port_floor(layer, view, prec)
    refetch = dram_floor(layer, view, prec, bits)
    if refetch is not None and refetch * (1 - 1e-12) > port:
        port, where = refetch * (1 - 1e-12), top
    mac = view.mac_pj + (view.accumulator_pj or 0.0)
    energy = layer.macs * mac + reads * top.read_pj / top.word_bits + writes * top.write_pj / top.word_bits
    out = (port, where, energy, top if top.size_bits is None else None, view)
    if key is not None:
        _FLOORS[key] = (arch, out)
        while len(_FLOORS) > _FLOORS_SIZE:
            _FLOORS.popitem(last=False)
    return out


def port_floor(layer, view, prec: dict[str, int]) -> tuple[float, Any]:
    """The least time (cycles) any mapping of ``layer`` spends on the busiest memory port of
    ``view`` (the accelerator as the layer sees it, `Accelerator.for_layer`), and that memory.

    Each element of an operand crosses every level of its hierarchy (``view.levels(op)``): a W or I
    element is written into each level below its top (a fill) and read out of each level towards
    the MAC; an output is written into each level it passes (from the MAC or the level below) and
    read out of each level below its top. So a level moves at least the operand's footprint (at
    ``prec[op]`` bits: the least precision it may have there) per direction it serves, and its port
    takes at least those bits / bandwidth / instances cycles (an instance per index of the array
    dims it is private to, at most their sizes); transfers on one port add (one shared port, else
    a read and a write port), and the model's latency is at least C plus the stall of that port,
    which is at least the port's total time minus C (`costmodel.loopnest.reference`, module
    docstring, "Latency")."""
    dims = layer.dims()
    worst, where = 0.0, view.memories[-1]
    for m in view.memories:
        inst = math.prod(view.array[a] for a in m.private_to)
        time: dict[bool | None, float] = {None: 0.0} if m.shared_port else {False: 0.0, True: 0.0}
        for op in ("W", "I", "O"):
            lv = view.levels(op)
            at = next((i for i, x in enumerate(lv) if x is m), None)
            if at is None:
                continue
            moved = footprint(op, dims, layer) * prec[op] / inst
            top = at == len(lv) - 1
            # (is a write, happens): W / I read towards the MAC, filled unless at the top; O
            # written from below, read up unless at the top
            for is_w in ((False,) if top else (False, True)) if op != "O" else ((True,) if top else (True, False)):
                pt = m.port(op)
                time[None if m.shared_port else is_w] += moved / (pt.write_bw if is_w else pt.read_bw)
        t = max(time.values())
        if t > worst:
            worst, where = t, m
    return worst * (1 - 1e-12), where


def step_bounds(network, arch, utilization=None, memo: dict | None = None, unique=None) -> dict[str, Any]:
    """Bounds of one transformer step (or any network) on ``arch``: ``latency_cycles`` (cycles),
    ``latency_s`` (s, at ``arch.clock_mhz``), ``energy_pj`` (pJ), ``dram_bound_layers`` (how many
    of the unique layers the DRAM term bounds), module docstring. The vector operations are costed
    exactly (`costmodel.vector`) when ``arch`` has a vector unit, else left out (as the step's totals
    leave them out); the step's latency is `costmodel.llm.step_latency` of the layers' bounds (the
    formula of the mapped step, increasing in every layer's latency: a vector operation beside
    matmuls adds what it takes beyond them). ``utilization(layer)``: the layer's best PE
    utilisation (`layer_bound`); None = 1. ``memo``: a dict the caller keeps across designs of one
    template, holding each layer's bound per (layer, what of ``arch`` it reads: PEs, DRAM level,
    precisions, MAC energies, utilisation); ``unique``: ``network.unique()`` if the caller has it."""
    lat = energy = 0.0
    by_dram = 0
    cycles = []                       # one execution of each unique layer, in order
    for layer, rep in (network.unique() if unique is None else unique):
        u = 1.0 if utilization is None else utilization(layer)
        key = (layer, tuple(arch.array.items()), arch.memories, tuple(sorted(arch.precisions.items())), arch.mac_pj,
               arch.accumulator_pj, u)
        hit = None if memo is None else memo.get(key)
        b = hit if hit is not None else layer_bound(layer, arch, u)
        if memo is not None and hit is None:
            memo[key] = b
        cycles.append(b.latency_cycles)
        lat += b.latency_cycles * rep
        energy += b.energy_pj * rep
        by_dram += b.bound_by == "dram"
    if network.vector_ops and getattr(arch, "vector", None) is not None:
        from costmodel.llm import step_latency
        from costmodel.vector import network_vector_costs
        rows = network_vector_costs(network, arch)
        energy += sum(r["energy_pj"] * r["repeat"] for r in rows)
        lat = step_latency(network, cycles, rows)["latency_cycles"]
    from costmodel.gpu.step import launch_cost_us
    launch_us = sum(launch_cost_us(arch, (network.workload or {}).get("phase")))   # host (unless a graph) + device
    if launch_us and network.workload:
        from costmodel.llm import step_launches
        lat += step_launches(network) * launch_us * arch.clock_mhz
    return {"latency_cycles": lat, "latency_s": lat / (arch.clock_mhz * 1e6), "energy_pj": energy,
            "dram_bound_layers": by_dram}

