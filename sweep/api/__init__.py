"""The Python API of dse-sweep, for notebooks and scripts: the same functions the ``sweep`` command
line calls, returning typed results instead of printing.

    from sweep import api

    layer = api.load_layer("resnet18", "layer1.0.conv1")
    res = api.map_layer(layer, "eyeriss_like", "salsa", iterations=300)
    res.energy_pj, res.latency_cycles, res.edp          # pJ, cycles, pJ x cycles
    print(res.loop_nest)

    run = api.run_campaign({"name": "s", "networks": ["deepbench_ocr"], ...}, output="out")
    results = api.load_results(run.output)
    api.pareto_front(results.totals, "area_mm2", "edp")

`serve` is ``sweep serve`` (`sweep.serving.serve`): requests served by a deployment, the summary and
the per-request and per-iteration DataFrames. What each part wraps (one code path with the CLI): `load_accelerator`, `load_network`, `load_layer`,
`map_layer`, `map_network` and `evaluate` are `sweep.commands.map_eval` (``sweep map`` / ``sweep eval``);
`load_campaign` and `run_campaign` are `sweep.kinds.load` and `sweep.engine.runner`
(``sweep run``); `load_results` reads a result directory with `sweep.engine.store.Store` and builds
the per-layer table with `sweep.reports.loopnest.layer_report` (``sweep report``); `pareto_front`
is `sweep.reports.pareto.pareto_front` on DataFrame columns.

Errors are the CLI's, raised instead of turned into exit codes: `sweep.common.errors.CampaignError` (a
bad argument, file or campaign: each finding names the key, as the CLI option or TOML key, and the
value; the CLI exits 2), `sweep.common.errors.StoreError` (an output or result directory that cannot be
used; exit 2), `Interrupted` (Ctrl-C during `run_campaign`; what finished is stored and
``resume=True`` completes it; exit 130). Nothing here prints.

Units everywhere: energy in pJ, latency in cycles, EDP in pJ x cycles (energy x latency), area in
mm^2, wall times in seconds. Where the numbers come from: the loop-nest cost model
(`costmodel.loopnest.reference`, Timeloop/ZigZag-style access counting, CACTI 65 nm SRAM energies)
and Flexer's multi-NPU model (`costmodel.npu`: SCALE-Sim fold latency, no energy model: energy and
EDP are None).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Union

from costmodel.loopnest.arch import Accelerator
from costmodel.npu import NPUArch
from costmodel.systolic.points import SystolicPoints
from costmodel.workload import Layer, Network
from sweep.api.results import Results, load_results, pareto_front
from sweep.common.errors import CampaignError, Finding, StoreError

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.loopnest.mapping import Mapping as LoopNestMapping
    from sweep.config.campaign import Campaign
    from sweep.engine.runner import Interrupted, RunSummary

__all__ = ["Architecture", "CampaignRun", "Evaluation", "LayerResult", "NetworkResult", "Results",
           "CampaignError", "StoreError", "Interrupted", "RunSummary",
           "load_accelerator", "load_network", "load_layer", "map_layer", "map_network", "map_step", "evaluate",
           "load_campaign", "run_campaign", "load_results", "pareto_front", "serve"]


def __getattr__(name: str) -> Any:
    """`Interrupted` and `RunSummary` of `sweep.engine.runner`, imported on first use (the runner
    brings pandas and pyarrow, which ``sweep map`` does not need)."""
    if name in ("Interrupted", "RunSummary"):
        from sweep.engine import runner
        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: What a layer or network is mapped on: a loop-nest accelerator, one of Flexer's multi-NPU
#: architectures, or one hardware point of DeepOpt's systolic grid (mapped with ``deepopt``).
Architecture = Union[Accelerator, NPUArch, SystolicPoints]


# -- loading -------------------------------------------------------------------------------------

def load_accelerator(spec: Architecture | str | Path, *, mapping: str | Path | None = None,
                     layer_type: str = "default", point: int | None = None) -> Architecture:
    """An accelerator from a preset name (``"eyeriss_like"``, ``"arch5"``: ``sweep list archs``), a
    TOML file, or an `Accelerator` / `NPUArch` / `SystolicPoints` object (returned as is). A
    DeepOpt systolic preset (``"deepopt_table3"``) gives one hardware point (`SystolicPoints` of
    length 1: J x K PEs, SRAM KiB, area mm^2), ``point`` its index when the preset has several
    (as ``sweep map --point``); map it with ``mapper="deepopt"``. With ``mapping``, ``spec``
    is a ZigZag hardware YAML and ``mapping`` its mapping YAML, translated as ``sweep import
    zigzag`` does (`costmodel.importers.zigzag`; the mapping entry ``layer_type``), without
    writing a file.

    Raises:
        CampaignError: unknown preset, unreadable or invalid file (key ``--arch``), a ``point``
            missing, out of range or given for another kind (key ``--point``), or a ZigZag YAML
            that cannot be modelled (the YAML key and value named).
        TypeError: ``spec`` is an object of no architecture kind.
    """
    if not isinstance(spec, (str, Path)):
        from sweep.kinds.registry import for_arch
        for_arch(spec)  # TypeError for anything no kind maps
        return spec
    if mapping is None:
        from sweep.commands.map_eval import load_arch
        arch: Architecture = load_arch(str(spec), point)
        return arch
    from costmodel.importers.errors import ZigzagError
    from costmodel.importers.zigzag import zigzag_to_dict
    from costmodel.loopnest.arch import accelerator_from_dict
    try:
        return accelerator_from_dict(zigzag_to_dict(spec, mapping, layer_type=layer_type), str(spec))
    except ZigzagError as e:  # the importer's error -> ours, as `sweep import zigzag` does
        raise CampaignError(e.source, [Finding(e.key, e.value, e.message)]) from None
    except ValueError as e:  # our loader refusing the translated accelerator
        raise CampaignError(str(spec), [Finding("accelerator", str(spec), str(e))]) from None


def load_network(spec: Network | str | Path, **workload: Any) -> Network:
    """A network: a zoo name (``sweep list networks``), a ``.csv`` file in the zoo format or an
    ``.onnx`` model (Conv, Gemm, MatMul nodes become layers), or a `Network` (returned as is).
    ``len(net)`` layers, each with a repeat count (``for layer, repeat in net``).

    A zoo transformer takes its step's parameters as keywords (`costmodel.transformer`):
    ``load_network("llama3_8b", phase="decode", batch=8, context=4096)``, also ``seq`` (prefill),
    ``weight_bits``, ``act_bits``, ``kv_bits``; the model's defaults where not given. The step's
    vector operations are ``net.vector_ops``, its parameters ``net.workload``.

    Raises:
        CampaignError: unknown name, missing or invalid file (key ``--network``; for ONNX the node);
            a step parameter the network does not take or a bad value (the option, e.g. ``--phase``).
    """
    if isinstance(spec, Network):
        return spec
    from sweep.commands.map_eval import resolve_network
    _check_step_keys(workload, "load_network")
    return resolve_network(str(spec), workload)


def _check_step_keys(workload: Mapping[str, Any], where: str) -> None:
    """Raise `CampaignError` naming the first key of ``workload`` that is no step parameter."""
    from sweep.commands.map_eval import WORKLOAD_OPTIONS
    unknown = [k for k in workload if k not in WORKLOAD_OPTIONS]
    if unknown:
        raise CampaignError(where, [Finding(unknown[0], workload[unknown[0]],
                                            f"no such step parameter; known: {list(WORKLOAD_OPTIONS)}")])


def load_layer(network: str | Path | None = None, layer: str | int | None = None,
               dims: str | None = None, **workload: Any) -> Layer:
    """One layer: ``layer`` (its name, or its 0-based index among the layers of ``network`` as
    ``sweep list networks --file`` numbers them) of ``network`` (as `load_network`, a
    transformer's step parameters as keywords: ``load_layer("llama3_8b", "score", phase="decode",
    context=4096)``), or explicit dimensions ``dims="K=64,C=64,OY=56,OX=56,FY=3,FX=3"`` (unlisted
    dims 1).

    Raises:
        CampaignError: both or neither of network/layer and dims, an unknown network or layer
            (keys ``--network``, ``--layer``, ``--dims``), a bad step parameter (as `load_network`).
    """
    from sweep.commands.map_eval import resolve_layer
    given = {k: v for k, v in workload.items() if v is not None}
    if given and dims:
        k = next(iter(given))
        raise CampaignError("options", [Finding(f"--{k.replace('_', '-')}", given[k],
                                                "the transformer step options apply to --network, not --dims")])
    return resolve_layer(None if network is None else str(network), None if layer is None else str(layer), dims,
                         given)


# -- mapping -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LayerResult:
    """The best mapping a mapper found for one layer (`map_layer`).

    Attributes:
        layer, mapper, engine, objective: what was mapped, by which mapper and engine, minimising what.
        value: the objective's value of the best mapping (pJ, cycles, pJ x cycles, or the
            multi-NPU metric).
        energy_pj: energy in pJ (None on the multi-NPU archs: no energy model).
        latency_cycles: latency in cycles.
        edp: energy x latency in pJ x cycles (None without an energy model).
        evaluations: mappings (or schedules) the search evaluated; wall_s: its time in seconds.
        params: the mapper's parameters as resolved (defaults filled in, the seed included).
        mapping: the best mapping in `costmodel.loopnest.mapping` form (spatial, temporal loops
            innermost first, per-operand boundaries), `evaluate` takes it back; None if the
            mapper gives none (multi-NPU schedules).
        loop_nest: the mapping as the loop nest ``sweep map`` prints (None without a mapping).
        details: every other figure of ``sweep map --json`` (``units``; loop-order mappers'
            ``spatial`` and ``spatial_candidates``; MIP ``status``, ``mip_gap``; multi-NPU
            ``transferred_bytes``, ``tiling``, ``dataflow``, ...).
    """

    layer: str
    mapper: str
    engine: str
    objective: str
    value: float
    energy_pj: float | None
    latency_cycles: float
    edp: float | None
    evaluations: int
    wall_s: float
    params: dict[str, Any]
    mapping: dict[str, Any] | None
    loop_nest: str | None
    details: dict[str, Any]
    _raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LayerResult:
        """From the dict `sweep.commands.map_eval.map_layer` returns (``sweep map --json`` plus ``loop_nest``)."""
        named = ("layer", "mapper", "engine", "objective", "value", "energy_pj", "latency_cycles", "edp",
                 "evaluations", "wall_s", "params", "mapping", "loop_nest")
        return cls(layer=str(d.get("layer", "")), mapper=str(d.get("mapper", "")), engine=str(d.get("engine", "")),
                   objective=str(d.get("objective", "")), value=d.get("value", float("nan")),
                   energy_pj=d.get("energy_pj"), latency_cycles=d["latency_cycles"], edp=d.get("edp"),
                   evaluations=int(d.get("evaluations", 0)), wall_s=float(d.get("wall_s", 0.0)),
                   params=dict(d.get("params") or {}), mapping=d.get("mapping"), loop_nest=d.get("loop_nest"),
                   details={k: v for k, v in d.items() if k not in named}, _raw=copy.deepcopy(dict(d)))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``sweep map --json`` prints for the same layer and arguments, plus
        ``loop_nest`` (a copy: changing it changes nothing here)."""
        return copy.deepcopy(self._raw)


@dataclass(frozen=True)
class NetworkResult:
    """Every unique layer of a network mapped, and the network's totals (`map_network`).

    Attributes:
        network, arch_kind, mapper, objective: what was mapped, on which kind of architecture.
        rows: one dict per unique layer, in network order (``layer``, ``repeat``, ``energy_pj``,
            ``latency_cycles``, ``edp``, ``value``, ``evaluations``, ``wall_s``, ``engine``,
            ``macs``, and ``mapping`` / ``spatial`` / ``transferred_bytes`` where the mapper gives them).
        total: per inference, energy (pJ) and latency (cycles) summed over the layers times their
            repeats (layers run one after another), ``edp`` = total energy x total latency,
            ``macs``, ``layers`` (unique), ``executed_layers``, ``evaluations``, ``wall_s``.
    """

    network: str
    arch_kind: str
    mapper: str
    objective: str
    rows: tuple[dict[str, Any], ...] = field(repr=False)
    total: dict[str, Any]
    _raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def layers(self) -> pd.DataFrame:
        """`rows` as a DataFrame: one row per unique layer (n_unique x columns of `rows`)."""
        import pandas as pd
        return pd.DataFrame(list(self.rows))

    @property
    def energy_pj(self) -> float | None:
        """Total energy per inference in pJ (None without an energy model)."""
        return self.total["energy_pj"]

    @property
    def latency_cycles(self) -> float:
        """Total latency per inference in cycles."""
        return self.total["latency_cycles"]

    @property
    def edp(self) -> float | None:
        """Total energy x total latency, pJ x cycles (None without an energy model)."""
        return self.total["edp"]

    @property
    def llm(self) -> dict[str, Any] | None:
        """A transformer step's serving figures (None for other networks): ``latency_s``,
        ``ttft_s`` (prefill) or ``time_per_token_s`` (decode), ``tokens_per_s``,
        ``energy_per_token_j`` (J), ``tokens``, ``clock_mhz``, ``workload`` and ``matmul_only``
        (the accelerator has no vector unit); `costmodel.llm.step_metrics`."""
        return copy.deepcopy(self._raw.get("llm"))

    @property
    def vector(self) -> dict[str, Any] | None:
        """A network's vector operations on the accelerator's vector unit (None for a network
        without them): ``ops`` (one row each: ``energy_pj``, ``latency_cycles`` per execution,
        ``memory``, ``repeat``), ``total``, ``costed`` and ``not_costed`` (the line saying what was
        left out when the accelerator has no vector unit); `sweep.engine.totals.vector_part`."""
        return copy.deepcopy(self._raw.get("vector"))

    @property
    def system(self) -> dict[str, Any] | None:
        """A step on a system of chips (`map_step` with ``system``, or a split step): ``label``,
        ``latency_s``, ``ttft_s`` or ``time_per_token_s``, ``round_trip_s``, ``compute_s``,
        ``collectives_s``, ``bubble``, ``tokens_per_s`` (the system), ``tokens_per_s_per_chip``,
        ``energy_j`` and ``energy_per_token_j`` (J, the links included where they state pJ/bit),
        ``collectives`` (one row each), ``chips``, ``system`` (its table);
        `costmodel.system.serving.system_step`. None for one chip."""
        return copy.deepcopy(self._raw.get("system"))

    @property
    def fusion_choice(self) -> list[dict[str, Any]] | None:
        """`map_step` with ``fusion="auto"``: one row per way of running the attention (``network``,
        ``fusion``, ``query_tile``, ``kv_tile``, ``status``, ``energy_pj``, ``latency_cycles``,
        ``edp``, ``dram_bits``, ``value``, ``chosen``; `sweep.commands.fusion_choice`); None otherwise."""
        return copy.deepcopy(self._raw.get("fusion_choice"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``sweep map --network N --json`` (no ``--layer``) prints (a copy)."""
        return copy.deepcopy(self._raw)


def _network_result(res: dict[str, Any]) -> NetworkResult:
    """A `NetworkResult` of `sweep.commands.map_eval.map_network`'s dict (copied)."""
    return NetworkResult(network=res["network"], arch_kind=res["arch_kind"], mapper=res["mapper"],
                         objective=res["objective"], rows=tuple(res["layers"]), total=dict(res["total"]),
                         _raw=copy.deepcopy(res))


def _params(params: Mapping[str, Any] | None, more: dict[str, Any]) -> dict[str, Any]:
    """The mapper parameters: ``params`` updated with the keyword arguments."""
    return {**dict(params or {}), **more}


def map_layer(layer: Layer, accelerator: Architecture | str | Path, mapper: str = "salsa",
              objective: str | None = None, seed: int = 0, *, params: Mapping[str, Any] | None = None,
              **more_params: Any) -> LayerResult:
    """Search a mapping of ``layer`` on ``accelerator`` (as `load_accelerator`) with ``mapper``
    (``sweep list mappers``), in-process: what ``sweep map`` does, the same numbers as ``sweep
    map --json`` with the same arguments.

    Args:
        objective: what to minimise: ``"energy"`` (pJ, the default on loop-nest accelerators),
            ``"latency"`` (cycles) or ``"edp"``; on the multi-NPU archs ``"latency_bytes"``
            (default), ``"latency"`` or ``"bytes"``.
        seed: the seed of stochastic mappers (a ``seed`` parameter wins).
        params: mapper parameters (``iterations=300``, ``engine="sa"``, ...), checked against
            the mapper's declaration.
        **more_params: more mapper parameters as keyword arguments; they win over ``params``.

    Raises:
        CampaignError: unknown mapper, a mapper of another kind of architecture, a bad objective
            or parameter (keys ``--mapper``, ``--objective``, ``--param KEY``), or no spatial
            unrolling of the layer under the accelerator's hint.
    """
    from sweep.commands.map_eval import map_layer as _map_layer
    arch = load_accelerator(accelerator)
    return LayerResult.from_dict(_map_layer(layer, arch, mapper, objective, seed, _params(params, more_params)))


def map_network(network: Network | str | Path, accelerator: Architecture | str | Path, mapper: str = "salsa",
                objective: str | None = None, seed: int = 0, *, params: Mapping[str, Any] | None = None,
                progress: Callable[[int, int, str], None] | None = None,
                gpu_memory_utilization: float | None = None, **more_params: Any) -> NetworkResult:
    """Map every unique layer of ``network`` (as `load_network`; layers of equal shape merged,
    repeats added) on ``accelerator`` with `map_layer`'s arguments, in order, and total them:
    ``sweep map --network N`` without ``--layer``. ``progress(done, total, layer_name)`` is called
    before each layer and once at the end (done = total, name ""). ``gpu_memory_utilization``: the
    share of the DRAM a transformer step may fill, in (0, 1] (None: vLLM's 0.9; `costmodel.capacity`).

    Raises:
        CampaignError: as `load_network`, `load_accelerator` and `map_layer` (on the first layer,
            before any long work); ``gpu_memory_utilization`` outside (0, 1].
        DoesNotFitError: a transformer step that does not fit that share of the DRAM.
    """
    from sweep.commands.llm_step import memory_share
    from sweep.commands.map_eval import map_network as _map_network
    share = memory_share(gpu_memory_utilization, "gpu_memory_utilization")
    res = _map_network(load_network(network), load_accelerator(accelerator), mapper, objective, seed,
                       _params(params, more_params), progress, gpu_memory_utilization=share)
    return _network_result(res)


def map_step(model: str, accelerator: Architecture | str | Path, mapper: str = "salsa",
             objective: str | None = None, seed: int = 0, *, params: Mapping[str, Any] | None = None,
             progress: Callable[[int, int, str], None] | None = None, system: Any = None,
             gpu_memory_utilization: float | None = None, **workload: Any) -> NetworkResult:
    """One transformer step mapped: ``model`` a zoo transformer (or a step's name) with the step's
    parameters as keywords (as `load_network`: ``phase``, ``batch``, ``seq``, ``context``, ...,
    ``fusion``); `map_network` of that step, except ``fusion="auto"``: every way of running the
    attention (unfused; fused with each query and K/V tile) mapped and the best under the
    objective kept (`sweep.commands.fusion_choice`; the table in `NetworkResult.fusion_choice`,
    ``progress`` then counts the variants).

    ``system``: serve the step on several chips: a `costmodel.system.serving.System`, a dict of its
    ``[system]`` keys (``tp``, ``pp``, ``ep``, ``replicas``, ``micro_batches``, ``interconnect``,
    ``chips``) or a TOML file; one chip's share is mapped and `NetworkResult.system` has the
    system's figures (``tp=8`` etc. as step keywords map the share on the default interconnect).

    ``gpu_memory_utilization``: the share of each chip's DRAM the step may fill (`map_network`'s).

    Raises:
        CampaignError: as `load_network` and `map_network`; a tile given with ``fusion="auto"``.
        DoesNotFitError: the step does not fit the accelerator's DRAM.
    """
    from sweep.commands.fusion_choice import AUTO, map_step_auto
    from sweep.commands.llm_step import memory_share
    from sweep.commands.system_step import load_system, system_workload
    share = memory_share(gpu_memory_utilization, "gpu_memory_utilization")
    sys_ = load_system(system, source="system")
    workload = system_workload(dict(workload), sys_)
    if sys_ is not None or any(workload.get(k) for k in ("tp", "pp", "ep")):
        if workload.get("fusion") == AUTO:
            raise CampaignError("map_step", [Finding("fusion", AUTO, "a system maps one way of running the "
                                                     "attention: give 'fused' or 'unfused'")])
        from sweep.commands.map_eval import map_network as _map_network
        res = _map_network(load_network(model, **workload), load_accelerator(accelerator), mapper, objective, seed,
                           _params(params, {}), progress, system=sys_, gpu_memory_utilization=share)
        return _network_result(res)
    if workload.get("fusion") != AUTO:
        return map_network(load_network(model, **workload), accelerator, mapper, objective, seed, params=params,
                           progress=progress, gpu_memory_utilization=share)
    _check_step_keys(workload, "map_step")
    res = map_step_auto(str(model), workload, load_accelerator(accelerator), mapper, objective, seed,
                        _params(params, {}), progress, gpu_memory_utilization=share)
    return _network_result(res)


@dataclass(frozen=True)
class Evaluation:
    """The cost of one given mapping (`evaluate`), from the reference cost model
    (`costmodel.loopnest.reference.evaluate`).

    Attributes:
        energy_pj: energy in pJ; latency_cycles: latency in cycles; edp: pJ x cycles (all None if
            the mapping is invalid).
        valid, reason: whether the mapping fits the layer and the accelerator, and if not, why.
        breakdown: ``operands`` (per operand, a list of per-memory-level dicts innermost first:
            ``reads``, ``writes``, ``fills``, ``readbacks``, ``energy_pj``, ``tile_bits``,
            ``instances``), ``mac_energy_pj``, ``macs``, ``compute_cycles``, ``stall_cycles``
            (memory -> cycles), ``utilization`` (real MACs / (compute cycles x PEs)).
        mapping: the mapping evaluated; loop_nest: it as the loop nest ``sweep eval`` prints.
    """

    energy_pj: float | None
    latency_cycles: float | None
    edp: float | None
    valid: bool
    reason: str
    breakdown: dict[str, Any]
    mapping: dict[str, Any] | None
    loop_nest: str
    _raw: dict[str, Any] = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``sweep eval --json`` prints, plus ``loop_nest`` (a copy)."""
        return copy.deepcopy(self._raw)


def evaluate(layer: Layer, accelerator: Accelerator | str | Path,
             mapping: Mapping[str, Any] | LoopNestMapping | LayerResult | str | Path) -> Evaluation:
    """The cost of ``mapping`` for ``layer`` on the loop-nest ``accelerator`` (as
    `load_accelerator`): what ``sweep eval`` prints. ``mapping`` is a mapping file (JSON or TOML,
    as ``sweep eval --mapping``), a dict in `costmodel.loopnest.mapping.Mapping.to_dict` form, a
    `Mapping`, or a `LayerResult` (its best mapping).

    Raises:
        CampaignError: an unreadable file or an invalid mapping (key ``--mapping``, the reason
            named), a result without a mapping, or an accelerator that is not a loop-nest one.
    """
    from sweep.commands.map_eval import eval_mapping
    arch = load_accelerator(accelerator)
    if not isinstance(arch, Accelerator):
        raise CampaignError("accelerator", [Finding("accelerator", getattr(arch, "name", arch),
                                                    "evaluate takes a loop-nest accelerator (sweep list archs)")])
    if isinstance(mapping, (str, Path)):
        rep = eval_mapping(layer, arch, mapping)
    else:
        rep = _evaluate_mapping(layer, arch, mapping)
    return Evaluation(energy_pj=rep["energy_pj"], latency_cycles=rep["latency_cycles"], edp=rep["edp"],
                      valid=rep["valid"], reason=rep["reason"], breakdown=rep["breakdown"],
                      mapping=rep["mapping"], loop_nest=rep["loop_nest"], _raw=copy.deepcopy(rep))


def _evaluate_mapping(layer: Layer, arch: Accelerator, mapping: Any) -> dict[str, Any]:
    """`sweep.commands.map_eval.eval_mapping`'s report for a mapping given as data rather than a file."""
    from costmodel.loopnest.mapping import Mapping as LoopNest, format_loop_nest
    from costmodel.loopnest.reference import evaluate as reference
    if isinstance(mapping, LayerResult):
        if mapping.mapping is None:
            raise CampaignError("mapping", [Finding("mapping", mapping.mapper, "this result has no mapping")])
        mapping = mapping.mapping
    if not isinstance(mapping, LoopNest):
        from sweep.commands.map_eval import mapping_data
        try:
            mapping = LoopNest.from_dict(mapping_data(mapping, layer, "<dict>"))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CampaignError("mapping", [Finding("--mapping", "<dict>", f"not a valid mapping: {e}")]) from None
    out = reference(layer, arch, mapping).to_dict()
    out["loop_nest"] = format_loop_nest(mapping, layer, arch)
    return out


# -- campaigns -----------------------------------------------------------------------------------

class CampaignRun(NamedTuple):
    """What `run_campaign` did: the result directory and the run's `RunSummary` (tasks run,
    skipped, failed, rows written, seconds). Unpacks as ``output, summary = run_campaign(...)``."""

    output: Path
    summary: RunSummary

    @property
    def ok(self) -> bool:
        """True if no task failed (a failed task's rows have status "error"; ``sweep run`` exits 1)."""
        return self.summary.tasks_failed == 0


def load_campaign(campaign: str | Path | Mapping[str, Any], output: str | Path | None = None,
                  base_dir: str | Path | None = None) -> Campaign:
    """A validated campaign from a TOML file (what ``sweep run`` reads) or from a dict with the
    same tables (``{"name": ..., "networks": [...], "architectures": {...}, "mappers": [...]}``);
    relative file names in a dict are resolved against ``base_dir`` (default: the current
    directory). ``output`` overrides the campaign's ``output`` (``--out``).

    Raises:
        CampaignError: unreadable file or invalid campaign: every problem, each with its TOML key
            path and value.
    """
    from sweep.kinds.load import load_campaign as _load, parse_campaign
    if isinstance(campaign, (str, Path)):
        return _load(campaign, output=output)
    return parse_campaign(dict(campaign), source="<dict>", base_dir=Path(base_dir or "."), output=output)


def run_campaign(campaign: str | Path | Mapping[str, Any] | Campaign, output: str | Path | None = None, *,
                 executor: str = "local", resume: bool = False,
                 progress: Callable[[int, int], None] | None = None, address: str | None = None,
                 base_dir: str | Path | None = None) -> CampaignRun:
    """Run a campaign (as `load_campaign`, or a loaded `Campaign`) into ``output`` (default: the
    campaign's own): ``sweep run``, the same task_ids and rows for a file and for the equal dict.

    Args:
        executor: ``"local"`` (in-process) or ``"ray"`` (parallel; ``address`` an existing
            cluster, default ``RAY_ADDRESS`` or a new local Ray); the rows are the same.
        resume: complete an interrupted run in the same directory (stored tasks are skipped).
        progress: called as ``progress(done, total)`` (tasks) once at the start and after each task.

    Returns:
        `CampaignRun`: the output directory and the summary; failed tasks do not raise (their
        rows have status "error", ``run.ok`` is False).

    Raises:
        CampaignError: invalid campaign or executor (nothing written).
        StoreError: ``output`` holds something else, or results of this campaign without
            ``resume`` (nothing written).
        Interrupted: Ctrl-C (or SIGTERM); finished tasks are stored, ``resume=True`` completes it.
    """
    from sweep.config.campaign import Campaign
    from sweep.engine.runner import run_campaign as _run
    if executor not in ("local", "ray"):
        raise CampaignError("executor", [Finding("executor", executor, "expected 'local' or 'ray'")])
    if isinstance(campaign, Campaign):
        c = campaign if output is None else replace(campaign, output=Path(output))
    else:
        c = load_campaign(campaign, output, base_dir)
    summary = _run(c, resume=resume, executor=executor, address=address, progress=progress)
    return CampaignRun(Path(c.output), summary)


def serve(network: str, accelerator: Architecture | str, **kw: Any):
    """Serve requests on ``accelerator`` (``sweep serve``; docs/serving.md): a trace (``trace=``
    a file or ``"azure_conv_2023"``) or a synthetic load (``rate``, ``requests`` or ``duration_s``,
    ``prompt``, ``output`` lengths as ``"512"``, ``"uniform:LO:HI"``, ``"lognormal:MEDIAN:SIGMA"``),
    under vLLM V1's scheduler (``scheduler={"max_num_seqs": ..., "max_num_batched_tokens": ...}``),
    ``slo_ttft`` / ``slo_tpot`` (s) and ``goodput=True`` for the goodput search, ``out`` a
    directory for the files. Returns `sweep.serving.serve.ServeResult`: ``summary`` (``ttft_s``,
    ``tpot_s``, ``e2e_s`` with ``mean``/``p50``/``p90``/``p99``, ``output_tokens_per_s``,
    ``requests_per_s``, ``slo_attainment``, ``goodput_rps``, ``energy_per_request_j``,
    ``preemptions``, ...), ``requests`` and ``iterations`` (DataFrames), ``table`` (pass it back
    as ``table=`` to serve another load without mapping again).

    Raises:
        CampaignError: a bad argument or trace (the option or file, row and column named).
    """
    from sweep.serving.serve import serve_api
    return serve_api(network, accelerator, **kw)
