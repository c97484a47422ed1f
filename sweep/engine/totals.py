"""A network's totals from its layers' figures: the one sum that `sweep map --network` and
architecture-search tasks share, so their floats agree to the bit."""

from __future__ import annotations

from typing import Any

__all__ = ["check_fits", "head_part", "network_totals", "step_memory", "step_precisions", "step_totals", "total", "vector_part"]


def total(rows: list[dict[str, Any]], key: str):
    """sum over ``rows`` of ``row[key] * row["repeat"]`` in row order; None if any is None."""
    vals = [r[key] for r in rows]
    return None if any(v is None for v in vals) else sum(v * r["repeat"] for v, r in zip(vals, rows))


def network_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A network's totals from its unique layers' rows (in network order, each with ``repeat``,
    ``energy_pj`` in pJ and ``latency_cycles``): energy and latency summed over the layers times
    their repeats (layers run one after another, as ZigZag sums them) and ``edp`` = total energy x
    total latency (pJ x cycles); None where a layer has none. The one place both `sweep.commands.map_eval.map_network` and
    architecture-search tasks (`sweep.engine.design_tasks`) total a network, so their floats agree
    to the bit."""
    energy, latency = total(rows, "energy_pj"), total(rows, "latency_cycles")
    return {"energy_pj": energy, "latency_cycles": latency,
            "edp": None if energy is None or latency is None else energy * latency}


def vector_part(network, arch) -> dict[str, Any]:
    """``{"costed", "ops": [rows], "total": {...}, "not_costed": str}`` of ``network``'s vector
    operations on ``arch`` (`costmodel.vector.network_vector_costs`: one row per operation, energy
    in pJ and latency in cycles per execution; totals x repeats); not costed (no rows, and a line
    naming what was left out) when ``arch`` declares no vector unit."""
    if not network.vector_ops:
        return {"costed": True, "ops": [], "total": {"energy_pj": 0.0, "latency_cycles": 0.0, "dram_bits": 0.0},
                "not_costed": ""}
    if getattr(arch, "vector", None) is None:
        n = sum(v.elements * r for v, r in zip(network.vector_ops, network.vector_repeats))
        kinds = sorted({v.op for v in network.vector_ops})
        return {"costed": False, "ops": [], "total": {},
                "not_costed": f"{getattr(arch, 'name', arch)} declares no vector unit ([vector]): "
                              f"{len(network.vector_ops)} vector operation(s) ({', '.join(kinds)}; {n:,} elements "
                              "per step) not costed; totals are the matmuls' only"}
    from costmodel.vector import network_vector_costs, vector_totals
    rows = network_vector_costs(network, arch)
    return {"costed": True, "ops": rows, "total": vector_totals(rows, network, arch), "not_costed": ""}


def _blocks(network) -> int:
    """The blocks of a transformer step's chip share (0: not a zoo transformer step)."""
    if not (network.workload or {}).get("model"):
        return 0
    from costmodel.transformer import config_of
    from costmodel.transformer.shard import shard_config, split_of
    return shard_config(config_of(network.workload), split_of(network.workload)).layers


def gpu_kernels(tot: dict[str, Any], network, arch, unique_latency: list | None) -> list | None:
    """On a GPU preset (``[gpu]``), each matmul layer of the step as the library's kernel
    (`costmodel.gpu.step.layer_kernel`, its loop-nest mapping the floor, the device's fixed time
    left to the launches): ``tot["latency_cycles"]`` becomes the kernels' sum x repeats, in place,
    with ``loopnest_latency_cycles`` (the mappings') and ``gpu_kernels`` (per unique layer: cycles,
    what binds, the tile / split / waves) beside it. Returns the layers' cycles (``unique_latency``
    unchanged on any other accelerator, or when a layer has none)."""
    if getattr(arch, "gpu", None) is None or unique_latency is None or tot.get("latency_cycles") is None \
            or any(x is None for x in unique_latency):
        return unique_latency
    from costmodel.gpu.step import fused_attention_scale, layer_kernel
    hz = arch.clock_mhz * 1e6
    blocks = _blocks(network)
    unique = list(network.unique())
    fused = [(layer, rep, c) for (layer, rep), c in zip(unique, unique_latency)
             if layer.w_role == "kv_cache" and layer.onchip]
    scale = fused_attention_scale(fused, arch, blocks or None)
    new, kern, total_cycles = [], [], 0.0
    for (layer, rep), c in zip(unique, unique_latency):
        if layer.w_role == "kv_cache" and layer.onchip:   # a tile inside the block's fused attention kernel
            cyc = c * scale
            k = None
            info = {"layer": layer.name, "latency_cycles": cyc, "bound": "fused attention",
                    "detail": f"the block's fused attention kernel: x {scale:.3f} the loop nest"}
        else:
            # a block's executions of an attention layer run as one batched kernel (step_launches)
            conc = (max(1, rep // blocks) if blocks else None) if layer.w_role == "kv_cache" else 1
            k = layer_kernel(layer, arch, c, conc)
            cyc = c if k is None else (k.time_s - k.fixed_s) * hz / (conc or 1)
            info = None if k is None else {"layer": layer.name, "latency_cycles": cyc, "bound": k.bound,
                                           "detail": k.detail}
        new.append(cyc)
        total_cycles += cyc * rep
        kern.append(info)
    tot["loopnest_latency_cycles"] = tot["latency_cycles"]
    tot["latency_cycles"] = total_cycles
    tot["gpu_kernels"] = kern
    return new


def step_totals(tot: dict[str, Any], network, arch, dram: dict[str, float] | None = None,
                unique_latency: list | None = None, unique_energy: list | None = None, system=None,
                gpu_memory_utilization: float | None = None):
    """A transformer step's totals from its matmuls' (``tot``: ``energy_pj`` in pJ and
    ``latency_cycles``, x repeats, as `network_totals` gives them), in place: ``matmul_energy_pj``
    / ``matmul_latency_cycles`` keep the matmuls' part, ``vector_energy_pj`` /
    ``vector_latency_cycles`` the vector operations' (`vector_part`; absent when ``arch`` has no
    vector unit), ``energy_pj`` / ``latency_cycles`` / ``edp`` become the step's, ``dram_bits`` the
    matmuls' DRAM traffic by role (``dram``; None if unknown) plus the vector operations'
    (activations). The step's latency: with ``unique_latency`` (cycles of one execution of each
    layer of ``network.unique()``), the vector operations that overlap layers run beside them
    (`costmodel.llm.step_latency`; ``serial_latency_cycles`` and ``overlapped_cycles`` say what
    overlapped); without it, or where a layer has none, matmuls then vector operations, one after
    another. On an accelerator with a fixed cost per kernel launch (``launch_overhead_us``),
    ``launches`` (`costmodel.llm.step_launches`) and ``launch_cycles`` (launches x the cost x the
    clock) are added and the latency includes them (absent, and nothing changes, at 0).

    A step split over chips (``tp``, ``pp``, ``ep`` in its workload: one chip's share) gets the
    figures of the system it is a share of (`costmodel.system.serving.system_step` on that split, joined
    as ``system`` says: its interconnect, replicas and fixed cost per launch, a campaign's ``[system]``;
    None: nvlink3, one copy, the accelerator's launch cost; one micro-batch either way; ``unique_energy``, pJ
    of one execution of each unique layer, prices the LM head's part under pipeline stages): the
    serving figures are the system's and ``llm["system"]`` has its collectives.

    ``gpu_memory_utilization``: the share of each chip's DRAM the step may fill (`step_memory`;
    None: `costmodel.capacity.GPU_MEMORY_UTILIZATION`).

    Returns:
        (`vector_part`'s dict, the serving figures of `costmodel.llm.step_metrics` with
        ``clock_mhz``, ``workload`` and ``matmul_only``, or None for a network that is not a
        transformer step or an architecture without a clock).
    """
    from costmodel.llm import step_metrics

    unique_latency = gpu_kernels(tot, network, arch, unique_latency)
    vec = vector_part(network, arch)
    tot["matmul_energy_pj"], tot["matmul_latency_cycles"] = tot["energy_pj"], tot["latency_cycles"]
    vt = vec["total"]
    if vec["costed"]:
        for k in ("energy_pj", "latency_cycles"):
            tot[f"vector_{k}"] = vt[k]
            tot[k] = None if tot[k] is None else tot[k] + vt[k]
        if tot["latency_cycles"] is not None and unique_latency is not None and vec["ops"] \
                and all(x is not None for x in unique_latency):
            from costmodel.llm import step_latency
            lat = step_latency(network, unique_latency, vec["ops"])
            tot["serial_latency_cycles"] = tot["latency_cycles"]
            tot["latency_cycles"] = lat["latency_cycles"]
            tot["overlapped_cycles"] = lat["overlapped_cycles"]
        if dram is not None:
            dram = {**dram, "activations": dram["activations"] + vt["dram_bits"]}
    tot["dram_bits"] = dram
    clock = getattr(arch, "clock_mhz", None)
    split = any((network.workload or {}).get(k) for k in ("tp", "pp", "ep"))
    if split and system is not None and system.launch_overhead_us is not None and hasattr(arch, "launch_overhead_us"):
        import dataclasses
        arch = dataclasses.replace(arch, launch_overhead_us=float(system.launch_overhead_us))
    from costmodel.gpu.step import launch_cost_us
    host_us, device_us = launch_cost_us(arch, (network.workload or {}).get("phase"))
    if (host_us or device_us or getattr(arch, "gpu", None) is not None) and clock \
            and tot["latency_cycles"] is not None and network.workload:
        from costmodel.llm import step_launches
        tot["launches"] = step_launches(network)
        tot["launch_cycles"] = tot["launches"] * (host_us + device_us) * clock
        if getattr(arch, "gpu", None) is not None:   # the host's and the device's parts
            tot["launch_host_cycles"] = tot["launches"] * host_us * clock
            tot["launch_device_cycles"] = tot["launches"] * device_us * clock
        tot["latency_cycles"] += tot["launch_cycles"]
    if vec["costed"] or "launch_cycles" in tot:
        tot["edp"] = None if tot["energy_pj"] is None or tot["latency_cycles"] is None \
            else tot["energy_pj"] * tot["latency_cycles"]
    if not network.workload or not clock:
        return vec, None
    llm = {**step_metrics(network.workload, tot["energy_pj"], tot["latency_cycles"], clock),
           "clock_mhz": clock, "workload": dict(network.workload), "matmul_only": not vec["costed"],
           "precisions": step_precisions(network, arch), **step_memory(network, arch, gpu_memory_utilization)}
    if split and unique_latency is not None and tot["latency_cycles"] is not None and tot["energy_pj"] is not None:
        from costmodel.system.serving import System, system_step
        from costmodel.transformer.shard import split_of
        from costmodel.transformer import config_of
        sp = split_of(network.workload)
        share = head_part(network, arch, tot, vec.get("ops") or [], unique_latency, unique_energy)
        how = {} if system is None else {"interconnect": system.interconnect, "replicas": system.replicas}
        figs = system_step(config_of(network.workload), network.workload,
                           System(tp=sp.tp, pp=sp.pp, ep=sp.ep, **how), share,
                           (llm["precisions"] or {}).get("activations", 16))
        llm["share"] = {k: llm.get(k) for k in ("latency_s", "energy_j", "tokens_per_s", "energy_per_token_j")}
        llm.update({k: figs[k] for k in ("latency_s", "energy_j", "tokens_per_s", "energy_per_token_j") if k in figs})
        llm["ttft_s" if network.workload["phase"] == "prefill" else "time_per_token_s"] = figs["latency_s"]
        llm["system"] = figs
    static_energy(llm, arch)
    return vec, llm


#: What a preset's energies are (every [power] preset so far: the model's per-access figures).
ENERGY_BASIS = ("dynamic energy from the model's per-access figures (CACTI 22 nm SRAM, Horowitz 45 nm MACs), "
                "not the chip's; static energy the chip's idle power x the step's time")


def static_energy(llm: dict[str, Any], arch) -> None:
    """On a chip with ``[power] idle_w`` (`costmodel.gpu.spec.PowerSpec`), its static energy over
    the step beside the dynamic energy, in place: ``dynamic_energy_j`` (the model's), ``static_energy_j``
    (W x s x the system's chips), ``energy_j`` and ``energy_per_token_j`` their sum, ``energy_basis``
    what they include (`ENERGY_BASIS`). Unchanged without a power figure."""
    power = getattr(arch, "power", None)
    if power is None or power.idle_w is None or llm.get("latency_s") is None or llm.get("energy_j") is None:
        return
    chips = int((llm.get("system") or {}).get("chips") or 1)
    static = power.idle_w * llm["latency_s"] * chips
    llm["dynamic_energy_j"], llm["static_energy_j"] = llm["energy_j"], static
    llm["energy_j"] = llm["energy_j"] + static
    if llm.get("tokens"):
        llm["energy_per_token_j"] = llm["energy_j"] / llm["tokens"]
    llm["energy_basis"] = ENERGY_BASIS


def head_part(network, arch, tot: dict[str, Any], vector_rows: list[dict], unique_latency: list,
              unique_energy: list | None = None) -> dict[str, float]:
    """One chip's share of a split step as `costmodel.system.serving.system_step` takes it:
    ``latency_s`` and ``energy_j`` of the whole share (``tot``), ``head_latency_s`` and
    ``head_energy_j`` of its LM head (its unique layer's cycles and pJ, ``unique_latency`` /
    ``unique_energy``; energy 0 when not given) and final norm (its vector row), with their two launches
    at the accelerator's fixed cost per launch."""
    clock = arch.clock_mhz * 1e6
    head_cyc = head_pj = 0.0
    launches = 0
    for i, (layer, _) in enumerate(network.unique()):
        if layer.name == "lm_head":
            head_cyc += unique_latency[i]
            head_pj += (unique_energy[i] if unique_energy is not None else 0.0)
            launches += 1
    for r in vector_rows:
        if r["name"] == "final_norm":
            head_cyc += r["latency_cycles"] * r["repeat"]
            head_pj += r["energy_pj"] * r["repeat"]
            launches += 1
    from costmodel.gpu.step import launch_cost_us
    head_cyc += launches * sum(launch_cost_us(arch, (network.workload or {}).get("phase"))) * arch.clock_mhz
    return {"latency_s": tot["latency_cycles"] / clock, "energy_j": tot["energy_pj"] * 1e-12,
            "head_latency_s": head_cyc / clock, "head_energy_j": head_pj * 1e-12}


def step_memory(network, arch, gpu_memory_utilization: float | None = None) -> dict[str, Any]:
    """``{"memory": footprint dict or None, "max_batch": int or None}`` of a transformer step on
    ``arch`` (`costmodel.capacity.step_footprint` and `max_batch`: bytes of weights, KV cache and
    live activations against ``gpu_memory_utilization`` of the DRAM's capacity, None: vLLM's 0.9,
    `costmodel.capacity.GPU_MEMORY_UTILIZATION`; the largest batch that fits at the step's
    context); None where the capacity is not declared or the network is no zoo step."""
    if not hasattr(arch, "precisions"):
        return {"memory": None, "max_batch": None}
    from costmodel.capacity import GPU_MEMORY_UTILIZATION, max_batch, step_footprint
    u = GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None else gpu_memory_utilization
    fp = step_footprint(network, arch, u)
    return {"memory": fp.to_dict() if fp is not None else None,
            "max_batch": max_batch(network, arch, gpu_memory_utilization=u) if fp is not None else None}


def step_precisions(network, arch) -> dict[str, int] | None:
    """The precisions (bits) a transformer step ran at on ``arch``: ``weights``, ``activations``
    and ``kv_cache`` (the W operand of a weight layer and of the attention score matmul, the I
    operand; `costmodel.loopnest.reference.operand_bits`: the step's own where it fixes them,
    else the accelerator's ``[precision]``); None on an architecture without that model."""
    if not hasattr(arch, "precisions"):
        return None
    from costmodel.loopnest.reference import operand_bits
    layers = [l for l, _ in network]
    weight = next((l for l in layers if l.w_role == "weight"), layers[0])
    kv = next((l for l in layers if l.w_role == "kv_cache"), None)
    bits = operand_bits(weight, arch)
    return {"weights": bits["W"], "activations": bits["I"],
            "kv_cache": operand_bits(kv, arch)["W"] if kv is not None else bits["I"]}


def check_fits(network, arch, gpu_memory_utilization: float | None = None) -> None:
    """Raise `DoesNotFitError` (exit 1) when ``network`` is a transformer step whose weights, KV
    cache and live activations do not fit ``gpu_memory_utilization`` of ``arch``'s DRAM
    (`costmodel.capacity.step_footprint`; None: vLLM's 0.9); checked before any layer is mapped.
    Nothing for other networks or a DRAM of no declared capacity."""
    if not network.workload or not hasattr(arch, "memories"):
        return
    from costmodel.capacity import GPU_MEMORY_UTILIZATION, max_batch, step_footprint
    from sweep.common.errors import DoesNotFitError
    u = GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None else gpu_memory_utilization
    fp = step_footprint(network, arch, u)
    if fp is not None and not fp.fits:
        mb = max_batch(network, arch, gpu_memory_utilization=u)
        fix = ("fewer tokens per step (--seq), fewer bits per activation (--act-bits), or a larger "
               f"{fp.activations_home}" if not fp.activations_fit else
               "a larger DRAM (more units, another kind) or fewer bits per weight (--weight-bits), or several chips"
               + (f", or a larger usable share (--gpu-memory-utilization, now {u:g})" if u < 1 else ""))
        hint = f"; the largest batch that fits is {mb}" if mb else f"; not even batch 1 fits: {fix}"
        raise DoesNotFitError(f"{network.name} does not fit {fp.arch}: {fp.reason()}{hint}")
