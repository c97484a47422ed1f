"""The cost table of a deployment on an accelerator: its iteration parts
(`costmodel.serving.iteration`) mapped on the grids of `costmodel.serving.table.default_grids` by
the same path as `sweep map --network` (`sweep.commands.map_eval.map_network`: every unique layer
mapped once, shared across the parts through one cache, the vector operations and their overlap),
plus the collectives of a split (`costmodel.system.serving.iteration_collectives`), the kernel
launches (`costmodel.llm.step_launches`) and the memory figures the KV cache is sized from."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from costmodel.serving.iteration import Deployment, attention_part, dense_part, head_part
from costmodel.serving.table import CostTable, default_grids
from costmodel.workload import Network
from sweep.common.ids import canonical_json

__all__ = ["build_cost_table", "deployment_memory", "map_part"]


def map_part(net: Network, arch, mapper: str, objective: str, seed: int, params: dict | None,
             cache: dict) -> tuple[float, float, float, float]:
    """(s, J) of one part on one chip: its layers mapped (`map_network`, ``cache`` shared), its
    vector operations and their overlap; no launches (counted by the table); then (s, J) of its
    final norm alone (0, 0 without one: what a pipeline's last stage runs once, not every stage).

    Raises:
        ValueError: a layer without a valid mapping (the part's name and the reason).
    """
    from sweep.commands.map_eval import map_network
    res = map_network(net, arch, mapper, objective, seed, params, cache=cache, traffic=False)
    tot = res["total"]
    if tot["latency_cycles"] is None or tot["energy_pj"] is None or not np.isfinite(tot["latency_cycles"]):
        bad = next((r for r in res["layers"] if r["status"] != "ok"), {})
        raise ValueError(f"{net.name}: layer {bad.get('layer')!r} has no valid mapping on {arch.name}: "
                         f"{bad.get('reason', bad.get('status'))}")
    clock = arch.clock_mhz * 1e6
    fin = [r for r in (res.get("vector") or {}).get("ops") or [] if r["name"] == "final_norm"]
    fin_s = sum(r["latency_cycles"] * r["repeat"] for r in fin) / clock
    fin_j = sum(r["energy_pj"] * r["repeat"] for r in fin) * 1e-12
    return tot["latency_cycles"] / clock, tot["energy_pj"] * 1e-12, fin_s, fin_j


def _launches(net: Network, dep: Deployment) -> int:
    """Kernel launches of a part (`costmodel.llm.step_launches`, counted on its blocks)."""
    from costmodel.llm import step_launches
    w = {"model": dep.config.name, **({"config": dep.config.shape()} if "config" in _step_workload(dep) else {})}
    for k in ("tp", "pp", "ep"):
        if getattr(dep, k) > 1:
            w[k] = getattr(dep, k)
    return step_launches(Network(net.name, net.layers, net.repeats, net.source, net.vector_ops, net.vector_repeats, w))


def _step_workload(dep: Deployment) -> dict[str, Any]:
    from costmodel.transformer import build_transformer
    return build_transformer(dep.config, phase="decode", batch=dep.ep, context=1, **dep.step_options()).workload


def deployment_memory(dep: Deployment, arch, max_tokens: int) -> dict[str, Any]:
    """One chip's memory figures (bytes): ``capacity_bytes`` (None: undeclared), ``weights_bytes``,
    ``activations_bytes`` (the live activations of a pass of ``max_tokens`` tokens,
    `costmodel.capacity.step_footprint`), ``token_bytes`` (one token's K and V over the chip's
    blocks), ``memory`` (what the DRAM is), ``kv_groups`` (ep: groups holding their own sequences'
    caches)."""
    from costmodel.capacity import step_footprint
    from costmodel.transformer import build_transformer
    big = step_footprint(build_transformer(dep.config, phase="decode", batch=-(-max_tokens // dep.ep) * dep.ep,
                                           context=1, **dep.step_options()), arch)
    one = step_footprint(build_transformer(dep.config, phase="decode", batch=dep.ep, context=1,
                                           **dep.step_options()), arch)
    if big is None or one is None:
        raise ValueError(f"{dep.config.name}: no memory model for it on {arch.name}")
    return {"capacity_bytes": big.capacity_bytes, "weights_bytes": big.weights_bytes,
            "activations_bytes": big.activations_bytes, "token_bytes": one.kv_cache_bytes, "memory": big.memory,
            "kv_groups": dep.ep}


#: What a worker process maps with (set by `_init`): the deployment, the accelerator, how to map.
_W: dict[str, Any] = {}


def _init(dep, arch, mapper, objective, seed, params, refs=None) -> None:
    if refs:
        from sweep.serving.shared_mappings import SharedMappings
        cache: Any = SharedMappings(arch, refs, mapper, objective, seed, params)
    else:
        cache = {}
    _W.update(dep=dep, arch=arch, how=(mapper, objective, seed, params), cache=cache)


#: The parts built in this process and their launches, by (deployment, part): a part depends on the
#: deployment alone, not on the accelerator, so the designs of a search build each once.
_PARTS: "OrderedDict[tuple, tuple[Network, int]]" = OrderedDict()
PARTS_KEPT = 4096


def _part(kind: str, a: int, b: int = 0) -> tuple[Network, int]:
    """(the part's network, its launches: dense parts only, else 0), built once per process."""
    dep = _W["dep"]
    key = (canonical_json({**dep.to_dict(), "shape": dep.config.shape()}), kind, a, b)
    hit = _PARTS.get(key)
    if hit is not None:
        _PARTS.move_to_end(key)
        return hit
    if kind == "dense":
        net = dense_part(dep, a)
    elif kind == "head":
        net = head_part(dep, a)
    else:
        net = attention_part(dep, a, b)
    _PARTS[key] = (net, _launches(net, dep) if kind == "dense" else 0)
    while len(_PARTS) > PARTS_KEPT:
        _PARTS.popitem(last=False)
    return _PARTS[key]


def _map_items(items: list[tuple[str, int, int]]) -> list[tuple[float, ...]]:
    """(s, J of one chip, launches, layers so far, the final norm's s and J) of each grid point, in a
    worker (its own layer cache)."""
    out = []
    for kind, a, b in items:
        net, launches = _part(kind, a, b)
        s_, j, fin_s, fin_j = map_part(net, _W["arch"], *_W["how"], _W["cache"])
        out.append((s_, j, launches, len(_W["cache"]), fin_s, fin_j))
    return out


def _batches(items: list, workers: int) -> list[list]:
    """Items in batches for ``workers`` processes: the dense points dealt round-robin (they share no
    layers), the head and attention points by kind in one batch each (they share many)."""
    dense = [i for i in items if i[0] == "dense"]
    rest = [i for i in items if i[0] != "dense"]
    per = max(1, workers)
    out = [dense[k::per * 2] for k in range(per * 2)]
    out += [[i for i in rest if i[0] == "head"], [i for i in rest if i[0] == "decode"]]
    chunks = [i for i in rest if i[0] == "chunk"]
    out += [chunks[k::per] for k in range(per)]
    return [b for b in out if b]


def _map_grid(items: list[tuple[str, int, int]], dep: Deployment, arch, how: tuple, refs, workers: int,
              progress: Callable[[int, int, str], None] | None) -> tuple[dict[tuple, tuple], int]:
    """Every grid point mapped (`_map_items`), in this process or by ``workers`` processes: (point ->
    its figures, the layers mapped)."""
    got: dict[tuple, tuple] = {}
    if progress:
        progress(0, len(items), "")
    layers = 0
    if workers == 1:
        _init(dep, arch, *how, refs)
        for k, it in enumerate(items):
            got[it] = _map_items([it])[0]
            if progress:
                progress(k + 1, len(items), f"{it[0]} {it[1]} {it[2]}")
        return got, len(_W["cache"])
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(dep, arch, *how, refs)) as pool:
        futs = {pool.submit(_map_items, b): b for b in _batches(items, workers)}
        for f in as_completed(futs):
            for it, r in zip(futs[f], f.result()):
                got[it] = r
                layers = max(layers, r[3])
            if progress:
                progress(len(got), len(items), f"{futs[f][-1][0]} points")
    return got, layers


def build_cost_table(dep: Deployment, arch, mapper: str = "salsa", objective: str = "latency", seed: int = 0,
                     params: dict | None = None, *, max_tokens: int, max_seqs: int, max_context: int,
                     system=None, launch_us: float | None = None, host_s: float = 0.0,
                     progress: Callable[[int, int, str], None] | None = None,
                     grids: dict[str, list[int]] | None = None, workers: int | None = None,
                     refs: tuple | None = None) -> CostTable:
    """The `CostTable` of ``dep`` on ``arch`` (module docstring).

    Args:
        dep: the deployment (model, precisions, attention, split).
        arch: a loop-nest accelerator with a clock.
        mapper, objective, seed, params: how each layer is mapped (as `sweep map`).
        max_tokens, max_seqs, max_context: the grids' limits (the scheduler's token budget,
            max_num_seqs, max_model_len).
        system: a `costmodel.system.serving.System` for the collectives of a split (None: nvlink3).
        launch_us: fixed cost per kernel launch (us); None: the accelerator's.
        host_s: the host's time per iteration (s).
        progress: called (done, total, what) as grid points are mapped and at the end.
        grids: other grid points (`default_grids`' keys).
        workers: processes mapping the grid points (None: the CPUs, at most 4; 1: in this process).
            Every layer's mapping depends on the layer and the seed only, so the table is the same
            for any number of workers.
        refs: reference accelerators of ``arch``'s chip whose mappings are re-costed on ``arch``
            instead of mapping it (`sweep.serving.shared_mappings`); None: ``arch``'s own mappings.

    Raises:
        ValueError: a part without a valid mapping; an accelerator without a clock.
    """
    import os
    from costmodel.system.serving import System, iteration_collectives
    t0 = time.perf_counter()
    if not getattr(arch, "clock_mhz", None):
        raise ValueError(f"--arch {getattr(arch, 'name', arch)}: a serving cost needs an accelerator with a clock")
    g = grids or default_grids(max_tokens, max_seqs, max_context)
    items = ([("dense", int(T), 0) for T in g["tokens"]] + [("head", int(S), 0) for S in g["seqs"]]
             + [("decode", 1, int(c) - 1) for c in g["contexts"]]
             + [("chunk", int(q), int(p)) for q in g["chunk_q"] for p in g["chunk_p"]])
    workers = min(4, os.cpu_count() or 1) if workers is None else max(1, workers)
    got, layers = _map_grid(items, dep, arch, (mapper, objective, seed, params), refs, workers, progress)
    cfg = dep.config
    sys_ = system or System(tp=dep.tp, pp=dep.pp, ep=dep.ep)
    if (sys_.tp, sys_.pp, sys_.ep) != (dep.tp, dep.pp, dep.ep):
        sys_ = System(tp=dep.tp, pp=dep.pp, ep=dep.ep, interconnect=sys_.interconnect)
    from costmodel.loopnest.reference import operand_bits
    act_bits = operand_bits(dense_part(dep, 1).layers[0], arch)["I"]
    mult = dep.tp * dep.ep
    pp = dep.pp        # a part is one stage's blocks: an iteration runs them pp times over, one stage after another
    dense_s, dense_j, dense_l = [], [], []
    for T in g["tokens"]:
        s_, j, n_l, _, fin_s, fin_j = got[("dense", int(T), 0)]
        c = iteration_collectives(cfg, sys_, int(T), 1, act_bits)
        # every stage's blocks, the final norm once (the last stage's), as system_step's round trip
        if pp > 1:
            s_, j = pp * (s_ - fin_s) + fin_s, pp * (j - fin_j) + fin_j
        dense_s.append(s_ + c["dense_s"])
        dense_j.append(j * mult + c["dense_j"])
        dense_l.append(pp * n_l - (pp - 1) * (fin_s > 0))
    head_s, head_j = [], []
    for S in g["seqs"]:
        s_, j = got[("head", int(S), 0)][:2]
        c = iteration_collectives(cfg, sys_, int(S), int(S), act_bits)
        head_s.append(s_ + c["head_s"])
        head_j.append(j * mult + c["head_j"])
    dec = [got[("decode", 1, int(c_) - 1)] for c_ in g["contexts"]]
    ch = np.array([[got[("chunk", int(q), int(p))][:2] for p in g["chunk_p"]] for q in g["chunk_q"]])
    head_l = _launches(head_part(dep, 1), dep)
    att_l = pp * _launches(attention_part(dep, 1, 0), dep)
    lu = getattr(arch, "launch_overhead_us", 0.0) if launch_us is None else launch_us
    dev = getattr(getattr(arch, "gpu", None), "kernel_us", 0.0) * 1e-6
    if dev:   # the device's fixed time per kernel, paid eager or replayed: the head's and the attention's
        dense_s = [x + n * dev for x, n in zip(dense_s, dense_l)]   # kernels with the head (every iteration)
        head_s = [x + (head_l + att_l) * dev for x in head_s]
    meta = {"model": cfg.name, "arch": getattr(arch, "name", ""), "mapper": mapper, "objective": objective, "seed": seed,
            "params": dict(params or {}), "deployment": dep.to_dict(), "clock_mhz": arch.clock_mhz,
            "launch_us": lu, "kernel_us": dev * 1e6, "interconnect": sys_.interconnect.name, "act_bits": act_bits,
            "layers_mapped": layers, "build_s": time.perf_counter() - t0, "grid_points": len(items),
            "workers": workers}
    if refs:
        meta["mapping_refs"] = [getattr(r, "name", "") for r in refs]
    return CostTable(tokens=np.asarray(g["tokens"]), dense_s=np.asarray(dense_s), dense_j=np.asarray(dense_j),
                     dense_launches=np.asarray(dense_l), seqs=np.asarray(g["seqs"]), head_s=np.asarray(head_s),
                     head_j=np.asarray(head_j), head_launches=head_l, contexts=np.asarray(g["contexts"]),
                     decode_s=np.asarray([d[0] * pp for d in dec]),
                     decode_j=np.asarray([d[1] * dep.tp * pp for d in dec]),
                     chunk_q=np.asarray(g["chunk_q"]), chunk_p=np.asarray(g["chunk_p"]), chunk_s=ch[:, :, 0] * pp,
                     chunk_j=ch[:, :, 1] * dep.tp * pp, attention_launches=att_l, launch_s=lu * 1e-6, host_s=host_s,
                     ep=dep.ep, meta=meta)
