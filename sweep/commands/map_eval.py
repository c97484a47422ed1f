"""One layer at a time: `sweep map` (search a mapping) and `sweep eval` (cost of a given mapping);
`map_network` maps every unique layer of a network in turn and sums the totals.

All run in-process (no Ray): a single layer is seconds of work at most.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Callable

from costmodel.workload import LOOP_DIMS, Layer, Network
from sweep.common.errors import CampaignError, Finding

__all__ = ["resolve_layer", "resolve_network", "parse_dims", "parse_param", "map_layer", "map_network",
           "eval_mapping", "load_arch"]


def _bad(source: str, key: str, value: Any, msg: str) -> CampaignError:
    return CampaignError(source, [Finding(key, value, msg)])


def parse_dims(text: str) -> Layer:
    """``"K=64,C=64,OY=56,OX=56,FY=3,FX=3"`` -> a `Layer` (unlisted dims 1; SY, SX, DY, DX, G, B
    accepted too, the paddings PY, PX as the zoo and ONNX layers have them, and the unpadded input
    size in_rows, in_cols: with them the loop-nest model moves no zero padding). Raises
    `CampaignError` naming the bad item."""
    allowed = set(LOOP_DIMS) | {"SY", "SX", "DY", "DX", "PY", "PX", "in_rows", "in_cols"}
    vals: dict[str, int | float] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        k, sep, v = item.partition("=")
        k = k.strip()
        if not sep or k not in allowed:
            raise _bad("--dims", "--dims", item, f"expected DIM=VALUE with DIM in {sorted(allowed)}")
        if k in ("PY", "PX"):  # paddings: >= 0, may be fractional (the zoo's DeepOpt tables use 1.5)
            try:
                pad = float(v)
            except ValueError:
                raise _bad("--dims", f"--dims {k}", v, "expected a number >= 0 (padding)") from None
            if not pad >= 0 or pad == float("inf"):
                raise _bad("--dims", f"--dims {k}", v, "expected a number >= 0 (padding)")
            vals[k] = int(pad) if pad.is_integer() else pad
            continue
        try:
            n = int(v)
        except ValueError:
            raise _bad("--dims", f"--dims {k}", v, "expected a positive integer") from None
        if n < 1:
            raise _bad("--dims", f"--dims {k}", n, "expected a positive integer")
        vals[k] = n
    if "K" not in vals or "C" not in vals:
        vals.setdefault("K", 1)
        vals.setdefault("C", 1)
    return Layer(name="dims", **vals)


#: The transformer workload parameters (`costmodel.transformer.build_transformer`) and the CLI
#: options that set them.
WORKLOAD_OPTIONS = {"phase": "--phase", "batch": "--batch", "seq": "--seq", "context": "--context",
                    "weight_bits": "--weight-bits", "act_bits": "--act-bits", "kv_bits": "--kv-bits",
                    "attention": "--attention", "fusion": "--fusion", "query_tile": "--query-tile",
                    "kv_tile": "--kv-tile", "batched_attention": "--batched-attention", "tp": "--tp", "pp": "--pp",
                    "ep": "--ep"}


def resolve_network(network: str, workload: dict[str, Any] | None = None) -> Network:
    """The network named by ``--network``: a zoo name, a transformer step's name as campaigns and
    reports write it (``llama3_8b/decode/b8/ctx4096``), or a file (``*.csv`` in the zoo format,
    ``*.onnx`` an ONNX model). ``workload``: the transformer step's parameters (`WORKLOAD_OPTIONS`;
    None values are left at the model's defaults), refused for a network without them.

    Raises:
        CampaignError: naming the file (and, for ONNX, the node), or the option (``--phase``, ...)
            and its value when the network has no such parameter or the value is invalid.
    """
    from costmodel.zoo import list_networks, load_network, load_network_file
    from costmodel.transformer import parse_step_name
    given = {k: v for k, v in (workload or {}).items() if v is not None}
    step = parse_step_name(network) if not Path(network).exists() else None
    if step is not None:  # a step's name, as campaigns and reports write it: llama3_8b/decode/b8/ctx4096
        network, named = step
        clash = [k for k in given if k in named and given[k] != named[k]]
        if clash:
            raise _bad("--network", WORKLOAD_OPTIONS[clash[0]], given[clash[0]],
                       f"the step name already sets {clash[0]} = {named[clash[0]]}")
        given = {**named, **given}
    if network in list_networks():
        try:
            return load_network(network, **given)
        except ValueError as e:  # the message names the parameter
            key = next((k for k in given if str(e).startswith(k) or f"{k} " in str(e) or f"{k}=" in str(e)
                        or f"'{k}'" in str(e)), next(iter(given), "--network"))
            raise _bad("--network", WORKLOAD_OPTIONS.get(key, key), given.get(key, network), str(e)) from None
    from costmodel.transformer import is_config_file
    if is_config_file(network):  # a Hugging Face config.json: a step of that model
        return _config_step(network, given)
    if given and not Path(network).is_file():
        raise _bad("--network", "--network", network, _unknown_network(network))
    if given:
        k = next(iter(given))
        raise _bad("--network", WORKLOAD_OPTIONS[k], given[k],
                   f"{network} is not a transformer model; {WORKLOAD_OPTIONS[k]} applies to the zoo's "
                   "transformers (`sweep list networks`)")
    p = Path(network)
    if p.suffix.lower() in (".csv", ".onnx") or p.is_file():
        if not p.is_file():
            raise _bad(network, "--network", network, "no such file")
        try:
            return load_network_file(p)
        except (OSError, ValueError) as e:
            raise _bad(network, "--network", network, str(e)) from None
    raise _bad("--network", "--network", network, _unknown_network(network))


def _config_step(path: str, given: dict[str, Any]) -> Network:
    """The step ``given`` of the model in the config.json ``path`` (`resolve_network`)."""
    from costmodel.importers.errors import InputFormatError
    from costmodel.zoo import load_network_file
    if not Path(path).is_file():
        raise _bad(path, "--network", path, "no such file")
    try:
        return load_network_file(path, **given)
    except InputFormatError as e:  # the file itself: its field and value named
        raise _bad(path, "--network", path, str(e)) from None
    except ValueError as e:  # a step parameter: the option named
        key = next((k for k in given if str(e).startswith(k)), next(iter(given), "--network"))
        raise _bad("--network", WORKLOAD_OPTIONS.get(key, key), given.get(key, path), str(e)) from None


def _unknown_network(network: str) -> str:
    """What an unknown ``--network`` gets: the closest names first, then every known one."""
    from costmodel.zoo import list_networks
    from sweep.config.networks import unknown_network
    return unknown_network(network, list_networks()) + ", or a .csv / .onnx / config.json file"


def resolve_layer(network: str | None, layer: str | None, dims: str | None,
                  workload: dict[str, Any] | None = None) -> Layer:
    """The layer named by ``--network/--layer`` (name or 0-based index of the network's layers;
    the network a zoo name or a .csv / .onnx file; ``workload`` a transformer step's parameters,
    as `resolve_network`) or by ``--dims``. Raises `CampaignError`."""
    if dims:
        if network or layer:
            raise _bad("options", "--dims", dims, "give either --dims or --network/--layer, not both")
        return parse_dims(dims)
    if not network or layer is None:
        raise _bad("options", "--network/--layer", None, "give --network N --layer L, or --dims")
    if (workload or {}).get("fusion") == "auto":
        raise _bad("--fusion", "--fusion", "auto", "auto chooses how a whole step runs (--network without --layer); "
                   "for one layer give --fusion fused or unfused")
    net = resolve_network(network, workload)
    layers = [l for l, _ in net]
    for l in layers:
        if l.name == layer:
            return l
    if layer.isdigit() and int(layer) < len(layers):
        return layers[int(layer)]
    raise _bad("--layer", "--layer", layer,
               f"no such layer in {network}; layers: {[l.name for l in layers][:60]} (or an index 0..{len(layers) - 1})")


def load_arch(name: str, point: int | None = None):
    """An architecture by name: a loop-nest accelerator preset or TOML file path, one of Flexer's
    multi-NPU arch1..arch8, or one hardware point of a DeepOpt systolic preset (`systolic_point`;
    ``point`` its index, needed when the preset has several).

    Raises:
        CampaignError: unknown name, an unreadable or invalid file (key ``--arch``), or a ``point``
            that is missing, out of range or given for another kind of architecture (``--point``).
    """
    from costmodel.loopnest.arch import list_accelerators, load_accelerator
    from costmodel.npu import list_npus, load_npu
    from costmodel.presets import systolic_presets
    systolic = sorted(systolic_presets())
    if name in systolic:
        return systolic_point(name, point)
    if point is not None:
        raise _bad("--point", "--point", point, f"only for the systolic presets {systolic}, not --arch {name}")
    if name in list_npus():
        return load_npu(name)
    if name in list_accelerators() or Path(name).is_file():
        try:
            return load_accelerator(name)
        except (OSError, ValueError) as e:
            raise _bad(name, "--arch", name, str(e)) from None
    raise _bad("--arch", "--arch", name,
               f"unknown accelerator; known: {list_accelerators() + list_npus() + systolic} or a TOML file")


def systolic_point(preset: str, point: int | None = None):
    """Hardware point number ``point`` of the systolic preset ``preset`` (`costmodel/presets/
    systolic.toml`) as a one-point `costmodel.systolic.points.SystolicPoints` whose ``spec`` records
    ``{"preset", "point"}``: numbered as a campaign of that preset numbers its rows' ``point`` (J, K,
    fsram, isram, psram ascending, `sweep.config.archspace.parse_points`), with its area (mm^2).
    ``point`` may be omitted for a preset of one point.

    Raises:
        CampaignError: ``point`` missing for a preset of several points, or out of range (``--point``).
    """
    from dataclasses import replace

    from sweep.config.archspace import parse_points
    found: list[Finding] = []
    pts = parse_points({"preset": preset}, Path.cwd(), lambda k, v, m: found.append(Finding(k, v, m)))
    if pts is None:  # a preset of the shipped file that does not parse: a bug of the file
        raise CampaignError(preset, found)
    listing = "; ".join(f"{i}: J x K = {pts.J[i]} x {pts.K[i]}, fSRAM {pts.fsram_kib[i]}, iSRAM {pts.isram_kib[i]}, "
                        f"pSRAM {pts.psram_kib[i]} KiB" for i in range(len(pts)))
    if point is None and len(pts) > 1:
        raise _bad("--point", "--point", None, f"--arch {preset} has {len(pts)} hardware points; give --point N ({listing})")
    i = 0 if point is None else point
    if not 0 <= i < len(pts):
        raise _bad("--point", "--point", point, f"--arch {preset} has {len(pts)} point(s): {listing}")
    return replace(pts.take(slice(i, i + 1)), spec={"preset": preset, "point": i})


def parse_param(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as a TOML value (1, 0.5, true, "auto") or else a string."""
    k, sep, v = text.partition("=")
    if not sep or not k.strip():
        raise _bad("--param", "--param", text, "expected KEY=VALUE")
    try:
        value = tomllib.loads(f"v = {v}")["v"]
    except tomllib.TOMLDecodeError:
        value = v
    return k.strip(), value


def _checked(arch, mapper_name: str, objective: str | None):
    """(the kind `sweep map` asks about ``arch``, the objective: ``objective`` or the kind's default),
    once the mapper is known to map that kind of architecture.

    Raises:
        CampaignError: unknown mapper, a mapper of another kind, an objective the kind does not have.
    """
    from mappers import MAPPER_NAMES, mapper_kind
    from sweep.kinds.registry import for_arch, for_mapper_kind

    arch_kind = for_arch(arch)
    kind, allowed = arch_kind.name, arch_kind.objectives
    known = [m for m in MAPPER_NAMES if mapper_kind(m) == arch_kind.mapper_kind]
    if mapper_name not in MAPPER_NAMES:
        raise _bad("--mapper", "--mapper", mapper_name, f"unknown mapper; for this --arch ({kind}): {known}")
    if mapper_kind(mapper_name) != arch_kind.mapper_kind:
        other = mapper_kind(mapper_name)
        raise _bad("--mapper", "--mapper", mapper_name, f"maps {other} architectures, but --arch is {kind}"
                   f"{for_mapper_kind(other).map_note}; mappers for this --arch: {known}")
    objective = objective or allowed[0]
    if objective not in allowed:
        raise _bad("--objective", "--objective", objective, f"expected one of {list(allowed)} for {kind} architectures")
    return arch_kind, objective


def map_layer(layer: Layer, arch, mapper_name: str, objective: str | None = None, seed: int = 0,
              params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Search a mapping of ``layer`` on ``arch`` with a mapper of its kind; every work unit runs
    in-process and the results are reduced. Returns a JSON-able dict (energy_pj, latency_cycles,
    edp, evaluations, wall_s, mapper, engine, mapping, loop_nest; ``status`` "ok", or
    "infeasible" with its ``reason`` when nothing valid was found, `mappers.base.result_status`). On a systolic hardware point
    (`load_arch`): DeepOpt's schedule of the layer (`SystolicKind.map_network` of a one-layer
    network): its LOS ``branch``, energy (pJ) and cycles per image, ``value`` the PM, ``point`` the
    hardware, ``fs_<branch>`` the PM of each fixed schedule.

    Raises:
        CampaignError: unknown mapper, a mapper of another kind, bad parameters or objective.
    """
    from mappers import get_mapper
    from mappers.base import check_params
    from sweep.common.notice import compile_notice
    from sweep.engine.problem import Problem
    from sweep.kinds.layers import LayerKind

    arch_kind, objective = _checked(arch, mapper_name, objective)
    if not isinstance(arch_kind, LayerKind):  # a network scheduled on a hardware point
        return _one_layer(arch_kind.map_network(Network(layer.name, (layer,)), arch, mapper_name, objective,
                                                dict(params or {})))
    prob = Problem.layer(mapper_name, layer, arch, objective=objective, params=params, seed=seed, keep_seed=True,
                         objective_param=arch_kind.rules.objective_param)  # e.g. the multi-NPU schedule metric
    resolved, probs = check_params(get_mapper(mapper_name).params, prob.params)
    if probs:
        raise CampaignError("--param", [Finding(f"--param {k}", v, m) for k, v, m in probs])
    prob = prob.with_params(resolved)
    from costmodel.loopnest.tables import KernelRangeError
    with compile_notice(arch):
        try:
            units = prob.units()
        except KernelRangeError as e:   # a layer beyond the kernel's 64-bit counts (the probes' evaluators)
            raise _bad("--dims", "layer", layer.name, str(e)) from None
        except ValueError as e:  # spatial search: no hint, or no unrolling of this layer under it
            if getattr(arch, "spatial_hint", None) is None:
                raise _bad("--param", "--param spatial", resolved.get("spatial"), str(e)) from None
            raise _bad("--arch", "spatial_hint", arch.spatial_hint.to_dict(), str(e)) from None
        try:
            # an exhaustive spatial search (spatial_candidates = all) skips a unit whose latency bound
            # cannot beat the best found (`Problem.solve`): the same best, a fraction of the units run
            sol = prob.solve(units, skip_by_floor=resolved.get("spatial_candidates") == "all")
        except KernelRangeError as e:
            raise _bad("--dims", "layer", layer.name, str(e)) from None
    best, status, reason, wall, results = sol.best, sol.status, sol.reason, sol.wall_s, sol.results
    out = {"mapper": mapper_name, "engine": best.engine, "objective": objective, "status": status,
           "value": best.value, "energy_pj": best.energy_pj, "latency_cycles": best.latency_cycles,
           "edp": best.edp, "evaluations": best.evaluations, "wall_s": wall,
           "units": len(results), "params": resolved, "layer": layer.name}
    if reason:
        out["reason"] = reason
    from costmodel.loopnest.mapping import Mapping, SpatialMapping, format_loop_nest
    ran = best.extra.get("spatial")  # loop-order mappers: the unrolling the best unit ran
    if ran is not None:
        out["spatial"] = SpatialMapping.from_json(ran).to_dict()
        out["spatial_candidates"] = best.extra.get("spatial_candidates", 1)
    if "status" in best.extra:  # MIP mappers (cosa): the solver's status, as the rows' column names it
        out["solver_status"] = best.extra["status"]
    for k in ("solver_s", "mip_gap", "mip_objective",  # MIP mappers (cosa)
              "transferred_bytes", "metric", "bytes_by_type", "tiling", "dataflow"):  # flexer / static
        if k in best.extra:
            out[k] = best.extra[k]
    if not arch_kind.energy_model:  # no energy model for the multi-NPU schedules: null, not NaN, in JSON
        return {k: (None if isinstance(v, float) and v != v else v) for k, v in out.items()}
    m = None
    if isinstance(best.extra.get("mapping"), dict):  # full-mapspace mappers give the whole mapping
        m = Mapping.from_dict(best.extra["mapping"])
    elif best.loops is not None:  # loop-ordering mappers: LOMA allocation of the best ordering
        from costmodel.loopnest.allocation import allocate
        sp = SpatialMapping.from_json(ran) if ran is not None else None
        m = allocate(layer, arch, sp, tuple(best.loops))
    if m is not None:
        out["mapping"] = m.to_dict()
        out["loop_nest"] = format_loop_nest(m, layer, arch)
        out.update(_utilization(layer, arch, m))
    return out


#: Below this share of the PEs busy on average, `sweep map` says so (and suggests the hint search).
LOW_UTILIZATION = 0.25


def _utilization(layer: Layer, arch, mapping) -> dict[str, Any]:
    """``utilization``: the layer's MACs / (compute cycles x PEs) under ``mapping``
    (`costmodel.loopnest.reference`'s breakdown: the average share of the PEs busy), and ``busy_pes``
    = utilization x PEs; nothing for an invalid mapping."""
    from costmodel.loopnest.reference import evaluate
    rep = evaluate(layer, arch, mapping)
    if not rep.valid:
        return {}
    u = float(rep.breakdown.get("utilization", 1.0))
    return {"utilization": u, "busy_pes": u * arch.pe_count}


def low_utilization_note(rows: list[dict[str, Any]], arch, searched: bool) -> str:
    """One line when a layer's mapping keeps fewer than `LOW_UTILIZATION` of ``arch``'s PEs busy
    (``rows``: `map_layer` results or `map_network` rows with ``utilization``): which layers, how
    many PEs, and what to try (the spatial search under the accelerator's hint, if it has one and
    the unrolling was not searched); "" otherwise."""
    low = [r for r in rows if r.get("utilization") is not None and r["utilization"] < LOW_UTILIZATION]
    if not low:
        return ""
    pes = getattr(arch, "pe_count", 0)
    worst = min(low, key=lambda r: r["utilization"])
    what = (f"{len(low)} layer(s) keep fewer than {LOW_UTILIZATION:.0%} of the {pes:,} PEs busy (lowest: "
            f"{worst.get('layer')}, {worst['utilization']:.1%}, {worst['busy_pes']:.1f} PEs on average)")
    if getattr(arch, "spatial_hint", None) is not None and not searched:
        return what + "; the accelerator's [spatial] unrolling does not fit them: try --param spatial=search " \
                      "(each layer's unrolling searched under its [spatial_hint])"
    return what + ": the array is larger than these layers can use"


def _one_layer(res: dict[str, Any]) -> dict[str, Any]:
    """`map_layer`'s dict of a one-layer network scheduled on a hardware point
    (`SystolicKind.map_network`): the network totals as the layer's figures, its LOS ``branch``
    (None if no branch fits), the ``point``, model parameters and fixed-schedule PMs."""
    tot, rows = res["total"], res["layers"]
    out = {"mapper": res["mapper"], "engine": res["network_pm"], "objective": res["objective"],
           "value": tot["pm_value"], "energy_pj": tot["energy_pj"], "latency_cycles": tot["latency_cycles"],
           "edp": tot["edp"], "evaluations": tot["evaluations"], "wall_s": tot["wall_s"], "units": 1,
           "params": res["params"], "layer": res["network"], "branch": rows[0]["branch"] if rows else None,
           "point": res["point"], "systolic": res["systolic"], "status": tot.get("status", "ok")}
    if tot.get("reason"):
        out["reason"] = tot["reason"]
    return out | {k: v for k, v in tot.items() if k.startswith("fs_")}


def eval_arch(name: str):
    """The loop-nest accelerator ``name`` (`load_arch`) for `sweep eval`, which costs a loop-nest
    mapping; any other kind of architecture is refused with what to run instead.

    Raises:
        CampaignError: as `load_arch`, or ``name`` is not a loop-nest accelerator (``--arch``).
    """
    from costmodel.loopnest.arch import Accelerator
    from costmodel.presets import systolic_presets
    from mappers import MAPPER_NAMES, mapper_kind
    from sweep.kinds.registry import for_arch

    arch = load_arch(name, 0 if name in systolic_presets() else None)
    if isinstance(arch, Accelerator):
        return arch
    kind = for_arch(arch)
    known = [m for m in MAPPER_NAMES if mapper_kind(m) == kind.mapper_kind]
    raise _bad("--arch", "--arch", name, f"`sweep eval` costs a loop-nest mapping (--mapping) on a loop-nest "
               f"accelerator, and this is a {kind.name} architecture ({kind.arch_help}); its schedule comes from "
               f"`sweep map --arch {name} --mapper {known[0]} --network N`")


def map_network(network: Network, arch, mapper_name: str, objective: str | None = None, seed: int = 0,
                params: dict[str, Any] | None = None,
                progress: Callable[[int, int, str], None] | None = None,
                cache: dict[Layer, dict[str, Any]] | None = None, system=None,
                traffic: bool = True, gpu_memory_utilization: float | None = None) -> dict[str, Any]:
    """Map every unique layer of ``network`` once (`Network.unique`: equal shapes merged, repeats
    added) with `map_layer`, in order, and total the results.

    Returns ``{"network", "arch_kind", "mapper", "objective", "layers": [...], "total": {...}}``:
    one row per unique layer (``layer`` name, ``repeat``, ``energy_pj`` in pJ, ``latency_cycles``,
    ``edp`` in pJ x cycles, ``evaluations``, ``wall_s`` in seconds, ``engine``, ``mapping`` when
    the mapper gives one; multi-NPU archs add ``transferred_bytes``), and the network totals per
    inference: energy and latency summed over the layers times their repeats (layers run one
    after another, as ZigZag sums them), ``edp`` = total energy x total latency, evaluations and
    wall time summed. On the multi-NPU archs there is no energy model: energy and EDP are None
    (null in JSON), per layer and in total. ``progress(done, total, layer_name)`` is called
    before each layer and once at the end (done = total). ``cache``: `map_layer`'s results by
    layer, read and filled (steps that share layers, mapped with the same arguments, map them once).

    On a systolic hardware point (`load_arch`) the network is scheduled as a whole, its layers as
    listed (not merged), exactly as a campaign stores that point (`SystolicKind.map_network`: the
    same keys, each layer's LOS ``branch``, the totals' ``pm_value`` and ``fs_<branch>``, the
    ``point``).

    A step split over chips (``tp``, ``pp``, ``ep`` in its workload: one chip's share), or any step
    with a ``system`` (`costmodel.system.serving.System`), is mapped as that chip's share and gets the
    system's figures (`sweep.commands.system_step.map_on_system`: ``res["system"]``).

    A transformer step whose DRAM footprint exceeds ``gpu_memory_utilization`` of the accelerator's
    capacity (the share a serving stack may fill; None: vLLM's 0.9, `costmodel.capacity`) is refused
    before any layer is mapped; a step that fits has ``llm["memory"]`` (its footprint, the
    utilisation and the usable bytes) and ``llm["max_batch"]`` (the largest batch that fits at its
    context).

    ``traffic=False`` leaves out each layer's DRAM traffic by role (``dram_bits``: one evaluation of
    every layer's mapping; no latency or energy depends on it), as a serving cost table does.

    Raises:
        CampaignError: as `map_layer` (raised on the first layer, before any long work).
        DoesNotFitError: the step does not fit the DRAM (the message gives the numbers).
    """
    from sweep.kinds.layers import LayerKind

    arch_kind, used = _checked(arch, mapper_name, objective)
    if not isinstance(arch_kind, LayerKind):  # the whole network scheduled on a hardware point
        if progress:
            progress(0, 1, network.name)
        res = arch_kind.map_network(network, arch, mapper_name, used, dict(params or {}))
        if progress:
            progress(1, 1, "")
        return res
    if system is not None or any((network.workload or {}).get(k) for k in ("tp", "pp", "ep")):
        from sweep.commands.system_step import map_on_system
        return map_on_system(network, arch, system, lambda share, acc: _map_share(share, acc, mapper_name, objective,
                                                                                 seed, params, progress, cache,
                                                                                 traffic, gpu_memory_utilization),
                             gpu_memory_utilization)
    return _map_share(network, arch, mapper_name, objective, seed, params, progress, cache, traffic,
                      gpu_memory_utilization)


def _map_share(network: Network, arch, mapper_name: str, objective: str | None, seed: int,
               params: dict[str, Any] | None, progress: Callable[[int, int, str], None] | None,
               cache: dict[Layer, dict[str, Any]] | None, traffic: bool = True,
               gpu_memory_utilization: float | None = None) -> dict[str, Any]:
    """`map_network` of a loop-nest ``network`` on one chip (checked: its kind, its capacity)."""
    from sweep.engine.totals import check_fits
    _, used = _checked(arch, mapper_name, objective)
    check_fits(network, arch, gpu_memory_utilization)
    if getattr(arch, "array_by_bits", None):   # the tensor cores' rate at the step's operand bits (FP8: 2x BF16)
        from costmodel.gpu.spec import at_step_bits
        arch = at_step_bits(arch, network.layers)
    net = network.unique()
    same: dict[tuple, list[str]] = {}   # the names of each shape, first one first (`Network.unique`)
    for lay, _ in network:
        names = same.setdefault(lay.shape_key(), [])
        if lay.name not in names:
            names.append(lay.name)
    rows: list[dict[str, Any]] = []
    n = len(net)
    for i, (layer, rep) in enumerate(net):
        if progress:
            progress(i, n, layer.name)
        res = cache.get(layer) if cache is not None else None
        if res is None:
            res = map_layer(layer, arch, mapper_name, objective, seed, params)
            if cache is not None:
                cache[layer] = res
        used = res["objective"]
        row = {"layer": layer.name, "repeat": rep, "status": res["status"], "energy_pj": res["energy_pj"],
               "latency_cycles": res["latency_cycles"], "edp": res["edp"], "value": res["value"],
               "evaluations": res["evaluations"], "wall_s": res["wall_s"], "engine": res["engine"],
               "macs": layer.macs, "merged": same[layer.shape_key()][1:]}
        for k in ("reason", "transferred_bytes", "spatial", "spatial_candidates", "mapping", "utilization",
                  "busy_pes"):
            if k in res:
                row[k] = res[k]
        rows.append(row)
    if progress:
        progress(n, n, "")

    from sweep.engine.totals import network_totals, total
    tot: dict[str, Any] = {**network_totals(rows),
                           "macs": network.macs, "layers": n, "executed_layers": network.layer_count,
                           "evaluations": sum(r["evaluations"] for r in rows),
                           "wall_s": sum(r["wall_s"] for r in rows)}
    if all("transferred_bytes" in r for r in rows):
        tot["transferred_bytes"] = total(rows, "transferred_bytes")
    from sweep.kinds.registry import for_arch
    out = {"network": network.name, "arch_kind": for_arch(arch).name,
           "mapper": mapper_name, "objective": used,
           "layers": rows, "total": tot}
    if network.vector_ops or network.workload:
        _add_step_figures(out, network, arch, traffic, gpu_memory_utilization)
    return out


def _add_step_figures(res: dict[str, Any], network: Network, arch, traffic: bool = True,
                      gpu_memory_utilization: float | None = None) -> None:
    """A transformer step's figures beside `map_network`'s layer totals (in place): each layer's
    DRAM traffic by role (``dram_bits`` per layer row; `costmodel.llm.dram_traffic`), then
    `sweep.engine.totals.step_totals`: ``res["vector"]`` (the vector operations), ``total`` split
    into matmul and vector parts with the step's DRAM traffic by role, and ``res["llm"]``."""
    from costmodel.llm import ROLES, dram_traffic
    from costmodel.loopnest.mapping import Mapping
    from sweep.engine.totals import step_totals

    dram: dict[str, float] | None = dict.fromkeys(ROLES, 0.0) if traffic else None
    for row, (layer, rep) in zip(res["layers"], network.unique()):
        if dram is None or not hasattr(arch, "memories") or not isinstance(row.get("mapping"), dict):
            dram = None
            continue
        try:
            by_role = dram_traffic(layer, arch, Mapping.from_dict(row["mapping"]))
        except ValueError:  # no valid mapping: the layer's figures are inf already
            dram = None
            continue
        row["dram_bits"] = by_role
        for k, v in by_role.items():
            dram[k] += v * rep
    vec, llm = step_totals(res["total"], network, arch, dram, [r["latency_cycles"] for r in res["layers"]],
                           [r["energy_pj"] for r in res["layers"]], gpu_memory_utilization=gpu_memory_utilization)
    res["vector"] = vec
    for row, k in zip(res["layers"], res["total"].get("gpu_kernels") or ()):
        if k is not None:   # the layer as the GPU's kernel (sweep.engine.totals.gpu_kernels)
            row["loopnest_latency_cycles"], row["latency_cycles"] = row["latency_cycles"], k["latency_cycles"]
            row["gpu"] = {"bound": k["bound"], "kernel": k["detail"]}
    if llm is not None:
        res["llm"] = llm


def mapping_data(data: Any, layer: Layer, source: str) -> Any:
    """The bare mapping dict in ``data``: ``data`` itself (`costmodel.loopnest.mapping` format), the
    ``mapping`` of one layer's `sweep map --json`, or, from a whole network's `sweep map --network
    N --json`, the ``mapping`` of its layer named ``layer.name``.

    Raises:
        CampaignError: a network's JSON without that layer or without its mapping (``--mapping``).
    """
    if not isinstance(data, dict):
        return data
    if isinstance(data.get("layers"), list) and "total" in data:  # a whole network's result
        rows = [r for r in data["layers"] if isinstance(r, dict) and r.get("layer") == layer.name]
        if not rows or not isinstance(rows[0].get("mapping"), dict):
            names = [r.get("layer") for r in data["layers"] if isinstance(r, dict)]
            raise _bad(source, "--mapping", source, f"a network's `sweep map --json` without a mapping of layer "
                       f"{layer.name!r} (its layers: {names}); pick one with --layer")
        return rows[0]["mapping"]
    if isinstance(data.get("mapping"), dict) and "energy_pj" in data:  # one layer's result
        return data["mapping"]
    return data


def eval_mapping(layer: Layer, arch, mapping_file: str | Path) -> dict[str, Any]:
    """Cost report of the mapping in ``mapping_file``: JSON or TOML in the `costmodel.loopnest.mapping`
    format, or the JSON `sweep map --json` prints (one layer's, or a whole network's: the layer
    evaluated is picked by name, `mapping_data`).

    Raises:
        CampaignError: unreadable file or an invalid mapping (the reason is named).
    """
    from costmodel.loopnest.reference import evaluate
    from costmodel.loopnest.mapping import Mapping, format_loop_nest

    p = Path(mapping_file)
    try:
        text = p.read_text()
    except OSError as e:
        raise _bad(str(p), "--mapping", str(p), f"cannot read: {e.strerror}") from None
    try:
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise _bad(str(p), "--mapping", str(p), f"not JSON or TOML: {e}") from None
    data = mapping_data(data, layer, str(p))  # a `sweep map --json` result: its mapping
    try:
        mapping = Mapping.from_dict(data)
    except (ValueError, KeyError, TypeError) as e:
        raise _bad(str(p), "--mapping", str(p), f"not a valid mapping: {e}") from None
    rep = evaluate(layer, arch, mapping)
    out = rep.to_dict()
    out["loop_nest"] = format_loop_nest(mapping, layer, arch)
    return out
