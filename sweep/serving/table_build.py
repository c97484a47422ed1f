"""The cost table of a deployment on an accelerator: its iteration parts
(`costmodel.serving.iteration`) mapped on the grids of `costmodel.serving.table.default_grids` by
the same path as `sweep map --network` (`sweep.commands.map_eval.map_network`: every unique layer
mapped once, shared across the parts through one cache, the vector operations and their overlap),
plus the collectives of a split (`costmodel.system.serving.iteration_collectives`), the kernel
launches (`costmodel.llm.step_launches`) and the memory figures the KV cache is sized from."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from costmodel.serving.iteration import Deployment, attention_part, dense_part, head_part
from costmodel.serving.table import CostTable, default_grids
from costmodel.workload import Network

__all__ = ["build_cost_table", "deployment_memory", "map_part"]


def map_part(net: Network, arch, mapper: str, objective: str, seed: int, params: dict | None,
             cache: dict) -> tuple[float, float]:
    """(s, J) of one part on one chip: its layers mapped (`map_network`, ``cache`` shared), its
    vector operations and their overlap; no launches (counted by the table).

    Raises:
        ValueError: a layer without a valid mapping (the part's name and the reason).
    """
    from sweep.commands.map_eval import map_network
    res = map_network(net, arch, mapper, objective, seed, params, cache=cache)
    tot = res["total"]
    if tot["latency_cycles"] is None or tot["energy_pj"] is None or not np.isfinite(tot["latency_cycles"]):
        bad = next((r for r in res["layers"] if r["status"] != "ok"), {})
        raise ValueError(f"{net.name}: layer {bad.get('layer')!r} has no valid mapping on {arch.name}: "
                         f"{bad.get('reason', bad.get('status'))}")
    return tot["latency_cycles"] / (arch.clock_mhz * 1e6), tot["energy_pj"] * 1e-12


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


def build_cost_table(dep: Deployment, arch, mapper: str = "salsa", objective: str = "latency", seed: int = 0,
                     params: dict | None = None, *, max_tokens: int, max_seqs: int, max_context: int,
                     system=None, launch_us: float | None = None, host_s: float = 0.0,
                     progress: Callable[[int, int, str], None] | None = None,
                     grids: dict[str, list[int]] | None = None) -> CostTable:
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
        progress: called (done, total, what) before each grid point and at the end.
        grids: other grid points (`default_grids`' keys).

    Raises:
        ValueError: a part without a valid mapping; an accelerator without a clock.
    """
    from costmodel.system.serving import System, iteration_collectives
    t0 = time.perf_counter()
    if not getattr(arch, "clock_mhz", None):
        raise ValueError(f"--arch {getattr(arch, 'name', arch)}: a serving cost needs an accelerator with a clock")
    g = grids or default_grids(max_tokens, max_seqs, max_context)
    cache: dict = {}
    mult = dep.tp * dep.ep
    total = len(g["tokens"]) + len(g["seqs"]) + len(g["contexts"]) + len(g["chunk_q"]) * len(g["chunk_p"])
    done = 0

    def tick(what: str) -> None:
        nonlocal done
        if progress:
            progress(done, total, what)
        done += 1

    cfg = dep.config
    sys_ = system or System(tp=dep.tp, ep=dep.ep)
    if (sys_.tp, sys_.pp, sys_.ep) != (dep.tp, dep.pp, dep.ep):
        sys_ = System(tp=dep.tp, pp=dep.pp, ep=dep.ep, interconnect=sys_.interconnect)
    from costmodel.loopnest.reference import operand_bits
    probe = dense_part(dep, 1)
    act_bits = operand_bits(probe.layers[0], arch)["I"]
    dense_s, dense_j, dense_l = [], [], []
    for T in g["tokens"]:
        tick(f"dense T={T}")
        net = dense_part(dep, int(T))
        s, j = map_part(net, arch, mapper, objective, seed, params, cache)
        c = iteration_collectives(cfg, sys_, int(T), 1, act_bits)
        dense_s.append(s + c["dense_s"])
        dense_j.append(j * mult + c["dense_j"])
        dense_l.append(_launches(net, dep))
    head_s, head_j = [], []
    for S in g["seqs"]:
        tick(f"head S={S}")
        s, j = map_part(head_part(dep, int(S)), arch, mapper, objective, seed, params, cache)
        c = iteration_collectives(cfg, sys_, int(S), int(S), act_bits)
        head_s.append(s + c["head_s"])
        head_j.append(j * mult + c["head_j"])
    dec_s, dec_j = [], []
    for c_ in g["contexts"]:
        tick(f"decode attention ctx={c_}")
        s, j = map_part(attention_part(dep, 1, int(c_) - 1), arch, mapper, objective, seed, params, cache)
        dec_s.append(s)
        dec_j.append(j * dep.tp)
    ch_s = np.zeros((len(g["chunk_q"]), len(g["chunk_p"])))
    ch_j = np.zeros_like(ch_s)
    for i, q in enumerate(g["chunk_q"]):
        for k, p in enumerate(g["chunk_p"]):
            tick(f"chunk attention q={q} p={p}")
            s, j = map_part(attention_part(dep, int(q), int(p)), arch, mapper, objective, seed, params, cache)
            ch_s[i, k], ch_j[i, k] = s, j * dep.tp
    if progress:
        progress(total, total, "")
    head_l = _launches(head_part(dep, 1), dep)
    att_l = _launches(attention_part(dep, 1, 0), dep)
    lu = getattr(arch, "launch_overhead_us", 0.0) if launch_us is None else launch_us
    meta = {"model": cfg.name, "arch": getattr(arch, "name", ""), "mapper": mapper, "objective": objective, "seed": seed,
            "params": dict(params or {}), "deployment": dep.to_dict(), "clock_mhz": arch.clock_mhz,
            "launch_us": lu, "interconnect": sys_.interconnect.name, "act_bits": act_bits,
            "layers_mapped": len(cache), "build_s": time.perf_counter() - t0, "grid_points": total}
    return CostTable(tokens=np.asarray(g["tokens"]), dense_s=np.asarray(dense_s), dense_j=np.asarray(dense_j),
                     dense_launches=np.asarray(dense_l), seqs=np.asarray(g["seqs"]), head_s=np.asarray(head_s),
                     head_j=np.asarray(head_j), head_launches=head_l, contexts=np.asarray(g["contexts"]),
                     decode_s=np.asarray(dec_s), decode_j=np.asarray(dec_j), chunk_q=np.asarray(g["chunk_q"]),
                     chunk_p=np.asarray(g["chunk_p"]), chunk_s=ch_s, chunk_j=ch_j, attention_launches=att_l,
                     launch_s=lu * 1e-6, host_s=host_s, ep=dep.ep, meta=meta)
