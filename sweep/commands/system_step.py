"""A transformer step on a system of chips (`costmodel.system.serving`): one chip's share mapped as
any step is (`sweep.commands.map_eval.map_network`), then the system's figures: collectives, TTFT or
time per output token, tokens/s of the system and per chip, energy per token with the links, memory
per chip.

Used by `sweep map --tp/--pp/--ep/--system`, `sweep.api.map_step(..., system=...)` and the campaigns'
``[system]`` table."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable

from sweep.common.errors import CampaignError, Finding

__all__ = ["load_system", "system_workload", "map_on_system"]


def load_system(spec: Any = None, *, chips: int | None = None, tp: int | None = None, pp: int | None = None,
                ep: int | None = None, replicas: int | None = None, micro_batches: int | None = None,
                interconnect: str | None = None, launch_overhead_us: float | None = None, source: str = "--system"):
    """The `costmodel.system.serving.System` of ``spec`` (a TOML file's path with a ``[system]`` table
    or the table at its top level, a dict, or a System) with the options given over it; None when
    nothing is given.

    Raises:
        CampaignError: an unreadable file, an unknown key or a bad value (the key and value named;
            ``--tp`` for the options).
    """
    from costmodel.system.serving import System
    given = {k: v for k, v in (("chips", chips), ("tp", tp), ("pp", pp), ("ep", ep), ("replicas", replicas),
                               ("micro_batches", micro_batches), ("interconnect", interconnect),
                               ("launch_overhead_us", launch_overhead_us)) if v is not None}
    if spec is None and not given:
        return None
    table: dict[str, Any] = {}
    src = source
    if isinstance(spec, System):
        table = spec.to_dict()
    elif isinstance(spec, dict):
        table = dict(spec)
    elif spec is not None:
        p, src = Path(spec), str(spec)
        try:
            data = tomllib.loads(p.read_text())
        except OSError as e:
            raise CampaignError(src, [Finding(source, src, f"cannot read: {e.strerror or e}")]) from None
        except tomllib.TOMLDecodeError as e:
            raise CampaignError(src, [Finding(source, src, f"not TOML: {e}")]) from None
        sub = data.get("system")
        table = sub if isinstance(sub, dict) else data
    if given.keys() & {"tp", "pp", "ep", "replicas"} and "chips" not in given:
        table.pop("chips", None)  # options re-split the system: its chip count follows them
    table.update(given)
    try:
        return System.from_dict(table, src)
    except ValueError as e:
        msg = str(e)
        key = next((f"--{k.replace('_', '-')}" for k in given if f"system.{k} " in msg or f"interconnect" in msg
                    and k == "interconnect"), source)
        raise CampaignError(src, [Finding(key, table.get(key.lstrip("-").replace("-", "_"), src), msg)]) from None


def system_workload(workload: dict[str, Any], system) -> dict[str, Any]:
    """``workload`` (a step's parameters) with the system's split (``tp``, ``pp``, ``ep``: above 1
    only); the options' own tp/pp/ep must agree with it.

    Raises:
        CampaignError: a tp, pp or ep in ``workload`` that differs from the system's (``--tp``).
    """
    if system is None:
        return workload
    out = dict(workload)
    for k in ("tp", "pp", "ep"):
        want = getattr(system, k)
        have = out.get(k)
        if have is not None and have != want:
            raise CampaignError("--system", [Finding(f"--{k}", have, f"the system splits with {k} = {want}")])
        out[k] = want if want > 1 else None
    return out


def map_on_system(network, arch, system, map_share: Callable[[Any, Any], dict[str, Any]],
                  gpu_memory_utilization: float | None = None) -> dict[str, Any]:
    """``network`` (a transformer step, one chip's share when split: `costmodel.system.parallel`) on
    ``system`` (None: the split the step records, on the default interconnect): its capacity checked at
    the whole batch, its share for one micro-batch mapped by ``map_share(network, arch)`` (`map_network`;
    ``arch`` with the system's fixed cost per launch where it sets one), then ``res["system"]`` = `costmodel.system.serving.system_step` and ``res["llm"]``'s
    memory and figures those of the system (the share's own under ``res["llm"]["share"]`` for a split step).
    Each chip's capacity counts ``gpu_memory_utilization`` of its DRAM (None: vLLM's 0.9,
    `costmodel.capacity`).

    Raises:
        CampaignError: the system splits differently from ``network``, the micro-batches do not
            divide the batch, or ``network`` is no zoo transformer step.
        DoesNotFitError: one chip's share does not fit its DRAM at the whole batch.
    """
    from costmodel.system.parallel import split_of
    from costmodel.system.serving import System
    from costmodel.transformer import build_transformer, config_of
    from costmodel.transformer.build import step_params
    from sweep.engine.totals import check_fits, step_memory, step_precisions

    w = network.workload or {}
    if not w.get("model"):
        raise CampaignError("--system", [Finding("--network", network.name, "a system serves a transformer step "
                                                 "(`sweep list networks`: the zoo's transformers)")])
    sp = split_of(w)
    if system is None:
        system = System(tp=sp.tp, pp=sp.pp, ep=sp.ep)
    if system.split != sp:
        raise CampaignError("--system", [Finding("--system", system.label(), f"the step {network.name} is split "
                                                 f"tp {sp.tp}, pp {sp.pp}, ep {sp.ep}")])
    m, per_group = system.micro_batches, int(w["batch"]) // sp.ep
    if per_group % m:
        raise CampaignError("--system", [Finding("--micro-batches", m, f"does not divide the {per_group} sequences "
                                                 "of each expert-parallel group" if sp.ep > 1 else
                                                 f"does not divide the batch {per_group}")])
    if system.launch_overhead_us is not None and hasattr(arch, "launch_overhead_us"):  # the serving software's
        import dataclasses
        arch = dataclasses.replace(arch, launch_overhead_us=float(system.launch_overhead_us))
    check_fits(network, arch, gpu_memory_utilization)  # the whole batch's KV cache is on the chip, whatever the micro-batches
    model = config_of(w)
    micro = network if m == 1 else build_transformer(model, **{**step_params(w), "batch": int(w["batch"]) // m})
    res = map_share(micro, arch)
    bits = (step_precisions(micro, arch) or {}).get("activations", 16)
    figs = None
    if all(res["total"].get(k) is not None for k in ("latency_cycles", "energy_pj")):
        from costmodel.system.serving import system_step
        from sweep.engine.totals import head_part
        share = head_part(micro, arch, res["total"], (res.get("vector") or {}).get("ops") or [],
                          [r["latency_cycles"] for r in res["layers"]], [r["energy_pj"] for r in res["layers"]])
        figs = system_step(model, w, system, share, bits)
    res["system"] = {"label": system.label(), **(figs or {"chips": system.chips, "system": system.to_dict()})}
    res["network"] = network.name
    if m > 1:
        res["micro_network"] = micro.name
    if res.get("llm"):
        res["llm"].pop("system", None)  # the default system's (step_totals): this system's is res["system"]
        res["llm"].update(step_memory(network, arch, gpu_memory_utilization))
        res["llm"]["workload"] = dict(w)
        if figs is not None:
            res["llm"].update({k: figs[k] for k in ("latency_s", "energy_j", "tokens", "tokens_per_s",
                                                    "energy_per_token_j") if k in figs})
            res["llm"]["ttft_s" if w["phase"] == "prefill" else "time_per_token_s"] = figs["latency_s"]
    return res
