"""The ``sweep`` command line (Typer + Rich).

Exit codes: 0 success; 2 invalid input (campaign, option, output directory; the message names the
file, key and value, and nothing is written); 1 runtime failure (what was stored stays
resumable with ``--resume``); 130 interrupted by Ctrl-C (resumable).
"""

from __future__ import annotations

if __name__ == "__main__":  # `python -m sweep.cli`: run as the console script, its imports guarded
    from sweep import main as _console_main
    raise SystemExit(_console_main())

import contextlib
import ctypes
import functools
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from mappers import mappers_by_kind
from sweep.commands import map_text, text
from sweep.commands.llm_step import (ActBitsOpt, AttentionOpt, BatchOpt, ContextOpt, FusionOpt, KvBitsOpt, PhaseOpt,
                                     QueryTileOpt, KvTileOpt, BatchedOpt, SeqOpt, WeightBitsOpt, list_step_options,
                                     workload_of, SystemOpt, ChipsOpt, TpOpt, PpOpt, EpOpt, ReplicasOpt,
                                     MicroBatchesOpt, InterconnectOpt, LaunchUsOpt, GpuMemoryUtilizationOpt, memory_share)
from sweep.commands.text import param_option, plain_help, seed_option
from sweep.common import fmt
from sweep.common.errors import CampaignError, ClusterLostError, Finding, StoreError, SweepError
from sweep.common.ids import strict_json
from sweep.kinds.registry import for_mapper_kind

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="rich",
                  help="dse-sweep: distributed design-space exploration of DNN accelerators.\n\n"
                       "Typical use: [bold]sweep validate campaigns/area16mm2.toml[/], then "
                       "[bold]sweep run campaigns/area16mm2.toml[/], then "
                       "[bold]sweep report results/area16mm2 --plots plots/[/].")
#: stdout and stderr for people. soft_wrap: a message is one line however long (the terminal folds
#: it; a pipe, a log or a copied command keeps it whole); tables keep the terminal's width or,
#: printed with `sweep.common.fmt.print_wide`, the width their content needs.
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _exit_now(code: int) -> None:
    """End the process at once with ``code`` once the output is flushed: after a lost Ray cluster,
    whose exit hook (``ray.shutdown``) would wait on the gone head node. Everything the run stored is
    committed and fsynced by then."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fail(e: Exception, code: int) -> None:
    err.print(f"error: {e}", style="red", highlight=False, markup=False)
    raise typer.Exit(code)


def _guard(fn):
    """Map our exceptions to exit codes in one place."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            with _json_only(bool(kw.get("as_json"))):
                return fn(*a, **kw)
        except (CampaignError, StoreError) as e:
            _fail(e, 2)
        except SweepError as e:
            _fail(e, 1)
    return wrapper


#: The real standard output while a --json command runs with file descriptor 1 sent to stderr.
_JSON_FD: int | None = None


@contextlib.contextmanager
def _json_only(on: bool):
    """Under --json, everything the work writes to file descriptor 1 (Python, Rich, and C
    libraries such as HiGHS, which write below Python) goes to stderr; `_echo_json` writes the one
    JSON document to the real stdout. No-op when off or when stdout is not file descriptor 1
    (Typer's test runner captures it in memory)."""
    global _JSON_FD
    try:
        real = on and sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        real = False
    if not real:
        yield
        return
    sys.stdout.flush()
    _JSON_FD = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        ctypes.CDLL(None).fflush(None)  # C stdio buffers too, while fd 1 is still stderr
        os.dup2(_JSON_FD, 1)
        os.close(_JSON_FD)
        _JSON_FD = None


def _echo_json(doc, default=str) -> None:
    """Print ``doc`` as one indented, strict JSON document (an infinite or NaN number is ``null``)
    on the real stdout (see `_json_only`)."""
    body = strict_json(doc, default=default, indent=1) + "\n"
    if _JSON_FD is None:
        typer.echo(body, nl=False)
        return
    data = body.encode()
    while data:
        data = data[os.write(_JSON_FD, data):]


class ExecutorKind(str, Enum):
    ray = "ray"
    local = "local"


@app.command()
@_guard
def run(
    campaign: Annotated[Path, typer.Argument(help="Campaign TOML file, e.g. campaigns/area16mm2.toml.")],
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory (default: the campaign's `output`).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Complete an interrupted run in the same output directory; stored tasks are skipped.")] = False,
    address: Annotated[Optional[str], typer.Option("--address", help="Existing Ray cluster (host:port or 'auto'); default: RAY_ADDRESS, else a local Ray.", rich_help_panel="Execution")] = None,
    executor: Annotated[ExecutorKind, typer.Option("--executor", help="'ray' (parallel) or 'local' (in-process, same rows).", rich_help_panel="Execution")] = ExecutorKind.ray,
) -> None:
    """Run a campaign: every task of it, in parallel on Ray, results into Parquet."""
    from sweep import api

    c = api.load_campaign(campaign, output=out_dir)
    _execute(c, resume, executor, address,
             f"sweep run {campaign} --resume" + (f" --out {out_dir}" if out_dir else ""))


@app.command()
@_guard
def rerun(
    directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run`.")],
    out_dir: Annotated[Path, typer.Option("--out", help="New output directory for the rerun.")],
    resume: Annotated[bool, typer.Option("--resume", help="Complete an interrupted rerun in --out.")] = False,
    address: Annotated[Optional[str], typer.Option("--address", help="Existing Ray cluster; default: RAY_ADDRESS, else a local Ray.", rich_help_panel="Execution")] = None,
    executor: Annotated[ExecutorKind, typer.Option("--executor", help="'ray' or 'local' (same rows).", rich_help_panel="Execution")] = ExecutorKind.ray,
) -> None:
    """Rerun the campaign recorded in DIR/manifest.json into a new directory (same task_ids and
    rows; refused with exit 2 if its input files or mapper versions changed since)."""
    from sweep.kinds import campaign_from_manifest

    c = campaign_from_manifest(directory, out_dir)
    _execute(c, resume, executor, address, f"sweep rerun {directory} --out {out_dir} --resume")


def _execute(c, resume: bool, executor: ExecutorKind, address: str | None, resume_hint: str) -> None:
    """Run campaign ``c`` with a progress bar; exit 130 if interrupted, 1 if a task failed. The output
    directory is checked before anything is printed or started. The bar counts tasks, or, for a search
    deciding as it goes (an Optuna study, a grid pruned by bound), designs, as the last lines do."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from sweep.engine.runner import Interrupted, run_campaign
    from sweep.engine.signals import set_forced_exit_note
    from sweep.engine.store import Store

    Store(c.output).check_new_or_resumable(c.config_hash(), resume)  # before any output; writes nothing
    Store(c.output).check_writable()
    set_forced_exit_note(f"interrupted again: stopped at once; what was stored stays; resume with: {resume_hint}")
    err.print(f"campaign [bold]{escape(c.name)}[/]: {escape(c.plan.describe_run(c))} -> {escape(str(c.output))}")
    unit = "designs" if c.plan.runs_study(c) and getattr(c, "search", None) is not None else "tasks"
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=False) as prog:
        bar = prog.add_task("running", total=None)
        progress = text.ProgressLines(lambda done, total: prog.update(bar, completed=done, total=total),
                                      err, unit)
        try:
            s = run_campaign(c, resume=resume, executor=executor.value, address=address,
                             progress=progress)
        except ClusterLostError as e:
            prog.stop()
            err.print(f"error: {e}; resume with: {resume_hint}", markup=False, highlight=False, soft_wrap=True)
            _exit_now(1)
        except (Interrupted, KeyboardInterrupt) as i:   # (a bare Ctrl-C: before Ray started)
            s = getattr(i, "summary", None)
            if s is not None and (unit == "tasks" or "pruned" in s.search):   # the bar ends where the line does
                g = s.search
                prog.update(bar, completed=g["mapped"] + g["pruned"] if "pruned" in g else s.tasks_before + s.tasks_run)
            prog.stop()
            line = (f"interrupted: {s.interrupted_text()}; resume with: {resume_hint}" if s is not None else
                    f"interrupted: no task stored in {c.output}; " + (f"resume with: {resume_hint}" if
                    (Path(c.output) / "manifest.json").exists() else "nothing was written"))
            err.print(line, markup=False, highlight=False)
            raise typer.Exit(130)
    for line in (s.mended.lines(str(c.output)) if s.mended else []):
        err.print(f"mended: {line}", style="yellow", markup=False, highlight=False, soft_wrap=True)
    err.print(f"done: {s.done_text(c.plan.runs_study(c))}", markup=False, highlight=False)
    text.print_search_outcome(s.search, err)
    text.print_run_outcome(s, err)


@app.command()
@_guard
def validate(campaign: Annotated[Path, typer.Argument(help="Campaign TOML file.")]) -> None:
    """Check a campaign file (or a tuning campaign) and say what it would run; writes nothing."""
    from sweep.kinds import load_any

    kind, c = load_any(campaign)
    out.print(kind.describe_valid(c, campaign), highlight=False, markup=False)


_LAYER_PANEL = "Layer (zoo / file / ONNX layer, a whole network, or explicit dimensions)"
#: The options naming one layer, shared by `map` and `eval`.
NetworkOpt = Annotated[Optional[str], typer.Option("--network", help="Zoo network, e.g. resnet34 (see `sweep list networks`), or a network file: .csv (zoo format), .onnx (Conv, Gemm, MatMul nodes) or a transformer's Hugging Face config.json (with --phase, --batch, ...; `sweep list networks --file F`). `sweep map` without --layer maps every unique layer.", rich_help_panel=_LAYER_PANEL)]
LayerOpt = Annotated[Optional[str], typer.Option("--layer", help="Layer name or 0-based index of the network's layers (its CSV rows or ONNX Conv/Gemm/MatMul nodes, as `sweep list networks --file`); omit it in `sweep map` to map the whole network.", rich_help_panel=_LAYER_PANEL)]
DimsOpt = Annotated[Optional[str], typer.Option("--dims", help="Explicit layer, e.g. K=64,C=64,OY=56,OX=56,FY=3,FX=3 (unlisted dims 1; B, G, SY, SX, DY, DX, the paddings PY, PX and the unpadded input in_rows, in_cols allowed).", rich_help_panel=_LAYER_PANEL)]
_MAPPER_HELP = "Mapper, by the kind of architecture it maps: " + "; ".join(
    f"{', '.join(names)} ({kind}: {for_mapper_kind(kind).arch_help})" for kind, names in mappers_by_kind().items() if names
) + ". Parameters: `sweep list mappers`."
ArchOpt = Annotated[str, typer.Option("--arch", help="Accelerator preset (see `sweep list archs`) or TOML file.")]


@app.command("map")
@_guard
def map_(
    arch: ArchOpt,
    mapper: Annotated[str, typer.Option("--mapper", help=_MAPPER_HELP)],
    network: NetworkOpt = None,
    layer: LayerOpt = None,
    dims: DimsOpt = None,
    objective: Annotated[Optional[str], typer.Option("--objective", help="What to minimise: energy (pJ), latency (cycles) or edp (default energy); on the multi-NPU archs arch1..arch8: latency_bytes (default), latency or bytes; on DeepOpt's systolic presets the PM: E (default), D, ED, E2D or ED2.")] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="SEED", callback=seed_option, help="Seed of stochastic mappers, 0 <= SEED < 2**32.")] = 0,
    param: Annotated[Optional[list[str]], typer.Option("--param", metavar="KEY=VALUE", callback=param_option, help="Mapper parameter KEY=VALUE (repeatable), e.g. --param iterations=2000 --param engine=sa; on systolic presets also DeepOpt's model parameters (a campaign's \\[systolic] table), e.g. --param fc_batch_quirk=true.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    point: Annotated[Optional[int], typer.Option("--point", min=0, metavar="N", help="With a systolic preset of several hardware points (deepopt_table5, ...): which one, numbered as a campaign's rows number them (the message without it lists them).")] = None,
    phase: PhaseOpt = None, batch: BatchOpt = None, seq: SeqOpt = None, context: ContextOpt = None,
    weight_bits: WeightBitsOpt = None, act_bits: ActBitsOpt = None, kv_bits: KvBitsOpt = None,
    attention: AttentionOpt = None, fusion: FusionOpt = None, query_tile: QueryTileOpt = None,
    kv_tile: KvTileOpt = None, batched_attention: BatchedOpt = False,
    system: SystemOpt = None, chips: ChipsOpt = None, tp: TpOpt = None, pp: PpOpt = None, ep: EpOpt = None,
    replicas: ReplicasOpt = None, micro_batches: MicroBatchesOpt = None, interconnect: InterconnectOpt = None,
    launch_us: LaunchUsOpt = None, gpu_memory_utilization: GpuMemoryUtilizationOpt = None,
) -> None:
    """Map one layer on one accelerator and print the best mapping as a loop nest; with --network
    and no --layer, map every unique layer of the network and print a per-layer table and totals
    (a transformer step, --network llama3_8b --phase decode --batch 8 --context 4096, adds its vector
    operations, DRAM traffic by role, time per token, tokens/s and energy per token; with --tp / --pp /
    --ep / --system, on several chips: one chip's share, the collectives and the system's figures).
    On a DeepOpt systolic preset (--mapper deepopt): each layer's LOS branch, energy and cycles, the
    network PM and the fixed-scheduling PMs, as a campaign stores that point."""
    from sweep import api
    from sweep.commands.map_eval import load_arch, parse_param

    from sweep.commands.system_step import load_system, system_workload
    workload = workload_of(phase, batch, seq, context, weight_bits, act_bits, kv_bits, attention, fusion, query_tile,
                           kv_tile, batched_attention)
    sys_ = load_system(system, chips=chips, tp=tp, pp=pp, ep=ep, replicas=replicas, micro_batches=micro_batches,
                       interconnect=interconnect, launch_overhead_us=launch_us)
    workload = system_workload(workload, sys_)
    share = memory_share(gpu_memory_utilization)
    if network and layer is None and not dims:
        _map_network(network, arch, mapper, objective, seed, param or [], as_json, point, workload, sys_, share)
        return
    if share is not None:
        raise CampaignError("--gpu-memory-utilization", [Finding("--gpu-memory-utilization", share, "applies to a "
                                                                 "whole transformer step (--network without --layer)")])
    lay = api.load_layer(network, layer, dims, **workload)
    acc = api.load_accelerator(load_arch(arch, point))
    params = dict(parse_param(p) for p in (param or []))
    res = api.map_layer(lay, acc, mapper, objective, seed, params=params).to_dict()
    if as_json:
        _echo_json({k: v for k, v in res.items() if k != "loop_nest"})
        text.exit_if_infeasible([res], err)
        return
    wide = Console(width=max(out.width, 160), soft_wrap=True)
    if "branch" in res:  # DeepOpt on a systolic hardware point
        wide.print(f"{mapper} on {map_text.point_text(res['point'])}: layer {res['layer']}: LOS branch {res['branch']}, "
                   f"energy {fmt.energy(res['energy_pj'])}, {fmt.cycles(res['latency_cycles'])} per image, "
                   f"PM {res['objective']} {fmt.sig(res['value'])}; {map_text.fs_text(res)}", highlight=False, markup=False)
        return
    wide.print(res.get("loop_nest", ""), highlight=False, markup=False)
    if "transferred_bytes" in res:  # multi-NPU schedule
        wide.print(f"{mapper} ({res['engine']}): tiling {res.get('tiling')} {res.get('dataflow')}, latency "
                   f"{fmt.cycles(res['latency_cycles'])}, {res['transferred_bytes']:,.0f} bytes transferred "
                   f"{res.get('bytes_by_type')}, {res['objective']} {res['value']:.4g}; {res['evaluations']:,} "
                   f"schedules in {res['wall_s']:.3f} s", markup=False)
        return
    if res.get("spatial_candidates", 1) > 1:
        wide.print(f"spatial unrolling {text.spatial_text(res['spatial'])}: best of {res['spatial_candidates']} "
                   f"candidates under the hint of {acc.name}", markup=False)
    wide.print(f"{mapper} ({res['engine']}): energy {fmt.energy(res['energy_pj'])}, latency "
              f"{fmt.cycles(res['latency_cycles'])}, EDP {fmt.edp(res['edp'])}; {res['evaluations']:,} "
              f"evaluations in {res['wall_s']:.3f} s", markup=False)
    text.print_low_utilization(wide, [res], acc, res)
    text.exit_if_infeasible([res], err)


def _map_network(network: str, arch: str, mapper: str, objective: str | None, seed: int,
                 param: list[str], as_json: bool, point: int | None = None, workload: dict | None = None,
                 system=None, gpu_memory_utilization: float | None = None) -> None:
    """`sweep map --network N` without --layer: every unique layer, a Rich progress bar on stderr,
    then the per-layer table and the totals (or one JSON object)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sweep.commands.fusion_choice import AUTO, map_step_auto
    from sweep.commands.map_eval import load_arch, map_network, parse_param, resolve_network

    auto = (workload or {}).get("fusion") == AUTO  # every way of running the attention, the best kept
    if auto and (system is not None or any((workload or {}).get(k) for k in ("tp", "pp", "ep"))):
        raise CampaignError("--fusion", [Finding("--fusion", AUTO, "on a system of chips give --fusion fused or "
                                                 "unfused (auto chooses for one chip)")])
    net = None if auto else resolve_network(network, workload)
    acc = load_arch(arch, point)
    params = dict(parse_param(p) for p in param)
    what = f"{network} (--fusion auto)" if auto else net.name
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(f"mapping {what}", total=None if auto else len(net.unique()))

        def progress(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, total=total, description=f"mapping {what}: {name}" if name else "done")

        res = (map_step_auto(network, workload, acc, mapper, objective, seed, params, progress,
                             gpu_memory_utilization=gpu_memory_utilization) if auto
               else map_network(net, acc, mapper, objective, seed, params, progress, system=system,
                                gpu_memory_utilization=gpu_memory_utilization))
    from sweep.commands.llm_step import print_config_notes
    print_config_notes(network, err)   # a config.json's notes, on stderr (the JSON on stdout stays one object)
    if as_json:
        _echo_json(res)
        text.exit_if_infeasible(res["layers"], err, dict(res["total"], layer=res["network"]))
        return
    map_text.print_network(res, arch, mapper, Console(width=max(out.width, 160), soft_wrap=True))
    if any("utilization" in r for r in res["layers"]):  # loop-nest layers: their PE utilisation
        text.print_low_utilization(Console(width=max(out.width, 160)), res["layers"], acc, {"params": params})
    text.exit_if_infeasible(res["layers"], err, dict(res["total"], layer=res["network"]))


@app.command("eval")
@_guard
def eval_(
    arch: ArchOpt,
    mapping: Annotated[Path, typer.Option("--mapping", help="Mapping file (JSON or TOML): spatial, temporal loops innermost first, per-operand boundaries (see costmodel.loopnest.mapping).")],
    network: NetworkOpt = None,
    layer: LayerOpt = None,
    dims: DimsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the cost report as JSON.")] = False,
) -> None:
    """Evaluate a given mapping: accesses and energy per operand and memory level, latency split."""
    from sweep import api
    from sweep.commands.map_eval import eval_arch

    rep = api.evaluate(api.load_layer(network, layer, dims), api.load_accelerator(eval_arch(arch)), mapping).to_dict()
    if as_json:
        _echo_json({k: v for k, v in rep.items() if k != "loop_nest"})
        return
    wide = Console(width=max(out.width, 160), soft_wrap=True)
    wide.print(rep.pop("loop_nest", ""), highlight=False, markup=False)
    map_text.print_cost_report(rep, wide)


class ListWhat(str, Enum):
    networks = "networks"
    archs = "archs"
    mappers = "mappers"


@app.command("list")
@_guard
def list_(what: Annotated[ListWhat, typer.Argument(help="networks | archs | mappers")],
          name: Annotated[Optional[str], typer.Argument(help="With `networks`: one zoo network's layers (shapes, MACs); with `archs`: one loop-nest accelerator (a preset or a .toml: clock, peak, memories, DRAM, area); with `mappers`: one mapper's parameters.", show_default=False)] = None,
          as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
          file: Annotated[Optional[str], typer.Option("--file", metavar="FILE", help="With `networks`: the layers of one network file (.csv or .onnx) and, for ONNX, the nodes ignored; a Hugging Face config.json: one step of that model (with --phase, --batch, ...), its parameters and the config fields read.")] = None,
          phase: PhaseOpt = None, batch: BatchOpt = None, seq: SeqOpt = None, context: ContextOpt = None,
          weight_bits: WeightBitsOpt = None, act_bits: ActBitsOpt = None, kv_bits: KvBitsOpt = None,
          attention: AttentionOpt = None, fusion: FusionOpt = None, query_tile: QueryTileOpt = None,
          kv_tile: KvTileOpt = None, batched_attention: BatchedOpt = False) -> None:
    """List the networks of the zoo, the architecture presets or the mappers; with a NAME, the
    layers of one zoo network or the parameters of one mapper; a transformer with a step's options
    (--phase decode --batch 8 --context 4096) lists every matmul and vector operation and the totals."""
    from sweep.commands import catalog as cat

    given = list_step_options(what.value, name, workload_of(phase, batch, seq, context, weight_bits, act_bits, kv_bits, attention, fusion,
                                                                  query_tile, kv_tile, batched_attention), file)

    if file is not None and what.value == "archs":
        raise CampaignError("sweep list", [Finding("--file", file, "`sweep list archs` takes a preset NAME or a "
                                                   ".toml path as NAME, not --file")])
    if name is not None and what.value == "archs":
        try:
            one = cat.arch_detail(name)
        except (OSError, ValueError) as e:
            raise CampaignError("sweep list archs", [Finding("NAME", name, str(e))]) from None
        _echo_json(one) if as_json else text.print_arch(one, out)
        return
    if file is not None and name is not None:
        raise CampaignError("sweep list", [Finding("--file", file, f"give a zoo NAME ({name}) or --file, not both")])
    if file is not None and what.value != "networks":
        raise CampaignError("--file", [Finding("--file", file, f"only `sweep list networks` takes --file, not {what.value}")])
    if what.value == "mappers" and name is not None:
        rows = [r for r in cat.catalog("mappers") if r["name"] == name]
        if not rows:
            from mappers import MAPPER_NAMES
            raise CampaignError("sweep list mappers", [Finding("NAME", name, f"unknown mapper; known: {', '.join(MAPPER_NAMES)}")])
        doc: object = rows[0]
    elif what.value == "networks" and (name is not None or file is not None):
        doc = cat.network_file(file, given) if file is not None else cat.zoo_network(str(name), given)
    else:
        doc = cat.catalog(what.value)
    if as_json:
        _echo_json(doc)
    elif isinstance(doc, list):
        text.print_catalog(what.value, doc, out)
    elif what.value == "mappers":
        text.print_mapper(doc, out)
    else:
        text.print_network(doc, out)
        from sweep.commands.llm_step import print_vector_ops
        print_vector_ops(doc, out)


@app.command()
@_guard
def report(
    directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    plots: Annotated[Optional[Path], typer.Option("--plots", help="Write PNG plots into this directory.")] = None,
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write an interactive report: one self-contained HTML file (Plotly; opens offline).")] = None,
) -> None:
    """Summarise a result directory: paper-style tables, and PNG plots with --plots.

    On a `sweep tune` directory: optimisation history and parameter importances (PNGs, default
    DIR/plots) and the held-out gap of the tuned vs the default schedule. With --html FILE, the
    same as an interactive page (hover, zoom, click a design)."""
    from sweep.kinds import build_report, print_report
    from sweep.kinds.registry import build_html

    if html is not None:
        from sweep.reports.html import PLOTLY_MISSING, plotly_available
        if not plotly_available():
            _fail(SweepError(f"--html {PLOTLY_MISSING}"), 2)
        if html.is_dir():
            _fail(SweepError(f"--html {html}: is a directory; give the HTML file to write"), 2)
    rep = build_report(directory, plots)
    _warn_foreign(directory)
    if as_json:
        _echo_json(rep, default=float)
    else:
        print_report(rep, Console(width=max(out.width, 150)))
    if html is not None:
        written = build_html(directory, html, rep)
        (err if as_json else out).print(f"interactive report: {written}", highlight=False, markup=False,
                                        soft_wrap=True)


def _warn_foreign(directory: Path) -> None:
    """A line on stderr naming the fragment files of ``directory`` that no commit wrote (not read)."""
    from sweep.engine.store import Store

    foreign = Store(directory).foreign()
    if foreign:
        names = ", ".join(f"{f.parent.name}/{f.name}" for f in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        err.print(f"{directory}: {len(foreign)} fragment(s) no run of this campaign wrote are not read ({names}); "
                  f"`sweep check {directory}`; `sweep run ... --resume` moves them to .foreign/", style="yellow",
                  markup=False, highlight=False, soft_wrap=True)


@app.command()
@_guard
def compact(directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run`.")]) -> None:
    """Merge a result directory's Parquet fragments into few files (same rows; crash-safe).
    `sweep run` does it by itself when a run ends with many fragments."""
    from sweep.engine.store import Store

    with Store(directory) as store:
        store.manifest()
        store.acquire(f"sweep compact {directory}")
        done = store.compact()
    for name, (before, after) in done.items():
        out.print(f"{name}: {before} -> {after} fragment(s)", markup=False)
    if not done:
        out.print(f"{directory}: nothing to compact", markup=False)


@app.command()
@_guard
def check(
    directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run` or `sweep tune`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Verify a result directory without changing it: every committed fragment present, its bytes the
    sha256 committed and its Parquet pages their checksums; fragments no run wrote (foreign); a commit
    a killed command left; tasks stored, crashed, failed, and how many `sweep run --resume` would run.
    Exit 0 if intact, 1 if not."""
    from sweep.engine.store.check import check as check_dir

    found = check_dir(directory)
    if as_json:
        _echo_json(found.as_dict())
    else:
        for line in found.lines():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    if not found.intact:
        raise typer.Exit(1)


@app.command()
@_guard
def tune(
    campaign: Annotated[Path, typer.Argument(help="Tuning campaign TOML, e.g. campaigns/tune_salsa_eyeriss.toml (mapper, budget, tables space, training, heldout, sampler).")],
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory: study journal, trial rows, best_params.toml (default: the campaign's `output`).")] = None,
    trials: Annotated[Optional[int], typer.Option("--trials", min=1, help="End with this many finished (complete + pruned) trials in the study (default: the campaign's `trials`).")] = None,
    parallel: Annotated[Optional[int], typer.Option("--parallel", min=1, help="Trials evaluated at once, one Ray task each (default: the campaign's `parallel`).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the study in an existing output directory (after Ctrl-C or a kill), or join it from another driver.")] = False,
    address: Annotated[Optional[str], typer.Option("--address", help="Existing Ray cluster; default: RAY_ADDRESS, else a local Ray.", rich_help_panel="Execution")] = None,
    executor: Annotated[ExecutorKind, typer.Option("--executor", help="'ray' (parallel) or 'local' (in-process, the same trials).", rich_help_panel="Execution")] = ExecutorKind.ray,
    num_cpus: Annotated[Optional[int], typer.Option("--num-cpus", min=1, help="CPUs of a new local Ray (default: all cores).", rich_help_panel="Execution")] = None,
) -> None:
    """Tune an annealer's schedule (T0, rho, restarts, ...) with Optuna, trials as Ray tasks.

    Each trial runs the mapper at a fixed budget of proposals on the training layers and seeds and
    scores the mean relative gap to the layers' reference optima; the best schedule is written to
    OUT/best_params.toml for campaigns' `params_file`, and compared with the default schedule on
    the held-out layers. Then: [bold]sweep report OUT[/]."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sweep.config.tune_campaign import load_tune_campaign
    from sweep.engine.runner import Interrupted
    from sweep.kinds.tune import TuneKind

    c = load_tune_campaign(campaign, output=out_dir)
    n = trials or c.trials
    err.print(f"tuning [bold]{escape(c.mapper)}[/] on {len(c.training[1])} {c.training[0]} layer(s) x {len(c.seeds)} seed(s) "
              f"at {c.budget} proposals, {len(c.space)} parameter(s), {c.sampler['name']} sampler: {n} trial(s), "
              f"{parallel or c.parallel} at a time -> {escape(str(c.output))}")
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("trials"), TimeElapsedColumn(), console=err) as prog:
        bar = prog.add_task("tuning", total=n)
        try:
            s = TuneKind().run_study(c, resume=resume, executor=executor.value, address=address, trials=trials,
                                     parallel=parallel, num_cpus=num_cpus,
                                     progress=lambda done, total: prog.update(bar, completed=done, total=total))
        except Interrupted as i:
            prog.stop()
            err.print(f"interrupted after {i.summary.run_here} trial(s) in this driver; running trials stay in the "
                      f"study and the next driver finishes them. Continue with: sweep tune {campaign} --resume"
                      + (f" --out {out_dir}" if out_dir else ""), markup=False)
            raise typer.Exit(130)
    err.print(f"done: {s.complete} complete + {s.pruned} pruned trial(s) ({s.run_here} here, {s.orphans} orphan(s) "
              f"of a stopped driver taken over) in {s.seconds:.1f} s (references {s.reference_s:.1f} s) -> {s.output}",
              markup=False)
    if s.best:
        err.print(f"best trial {s.best['trial']}: mean gap {100 * s.best['values'][0]:.4f} %, {s.best['full']}",
                  markup=False)
    for k, v in s.heldout.items():
        err.print(f"held-out ({k}): mean gap {100 * v['mean_gap']:.4f} %, reach {100 * v['reach_rate']:.1f} %, "
                  f"{v['mean_evals_to_optimum']:.0f} proposals to the optimum, seeds {v['seeds']}", markup=False)


import_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="rich",
                         help="Bring other tools' inputs in: [bold]sweep import zigzag[/] turns a ZigZag hardware "
                              "YAML + mapping YAML into an accelerator TOML for --arch and campaigns.")
app.add_typer(import_app, name="import")


@import_app.command("zigzag")
@_guard
def import_zigzag_(
    accelerator: Annotated[Path, typer.Option("--accelerator", help="ZigZag hardware YAML, e.g. zigzag/inputs/hardware/tpu_like.yaml.")],
    mapping: Annotated[Path, typer.Option("--mapping", help="ZigZag mapping YAML: the entry 'default' (or --layer-type) gives the spatial unrolling and the memory operand links (W/I -> I1/I2).")],
    out_file: Annotated[Path, typer.Option("--out", help="Accelerator TOML to write (replaced atomically; nothing is written on error).")],
    layer_type: Annotated[str, typer.Option("--layer-type", help="Mapping entry to import (ZigZag picks per layer name, then type, then 'default').")] = "default",
    name: Annotated[Optional[str], typer.Option("--name", help="Accelerator name (default: the YAML's name).")] = None,
    precision: Annotated[Optional[str], typer.Option("--precision", help="Datapath precisions in bits, e.g. W=8,I=8,O=16,O_final=8 (default: ZigZag's ONNX defaults, these).")] = None,
) -> None:
    """Translate a ZigZag accelerator into our TOML: memories innermost first as in the YAML, served_dimensions -> private_to (its complement), r_cost/w_cost (ZigZag: per bandwidth_max-bit access) -> energy per bandwidth_min-bit word r_cost x min / max, read_write port -> shared_port, no accumulator in the MAC (ZigZag's MAC has none).

    In-memory compute (is_imc, imc_type ...), several cores, CACTI cost extraction and bad operand links are refused with exit 2 naming the YAML key. Example:

        sweep import zigzag --accelerator tpu_like.yaml --mapping tpu_like_map.yaml --out tpu_zz.toml
        sweep map --arch tpu_zz.toml --network resnet18 --layer conv1 --mapper loma --param lpf_limit=6
    """
    from costmodel.importers.zigzag import ZigzagError, import_zigzag
    prec = None
    if precision:
        prec = {}
        for item in precision.split(","):
            k, sep, v = item.strip().partition("=")
            if not sep or k not in ("W", "I", "O", "O_final") or not v.strip().isdigit() or int(v) < 1:
                raise CampaignError("--precision", [Finding("--precision", item, "expected W|I|O|O_final=BITS, e.g. O=16")])
            prec[k] = int(v)
    try:
        acc, notes = import_zigzag(accelerator, mapping, out_file, layer_type=layer_type, precision=prec, name=name)
    except ZigzagError as e:  # the importer's error -> ours (exit 2), same text
        raise CampaignError(e.source, [Finding(e.key, e.value, e.message)]) from None
    for n in notes:
        err.print(f"note: {n}", highlight=False, markup=False)
    out.print(f"{out_file}: accelerator {acc.name!r}, array {acc.array}, {len(acc.memories)} memories "
              f"({', '.join(m.name for m in acc.memories)}), spatial {acc.spatial.to_dict()}; "
              f"use it with --arch {out_file}", highlight=False, markup=False)


from sweep.commands.serve import serve_command  # noqa: E402


@app.command("serve")
@_guard
@functools.wraps(serve_command)
def serve(*args, **kw) -> None:
    doc, lines = serve_command(*args, **kw)
    if doc is not None:
        _echo_json(doc)
    for line in lines:
        out.print(line, highlight=False, markup=False)

plain_help(app)  # `--help` without <bool> / <list[str]> (every command is registered by now)


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
