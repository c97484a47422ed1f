"""Tuning campaigns (TOML) for `sweep tune` -> a validated `TuneCampaign`.

A tuning campaign says which annealer to tune (``salsa`` or ``primitive_sa``), over which search
space, on which training layers, at which fixed evaluation budget, with which Optuna sampler and
pruner, and which held-out layers judge the result. Every problem is reported with its TOML key
and value in one `CampaignError` (exit 2 from the CLI) before anything is written.

Example (``campaigns/tune_salsa_eyeriss.toml`` is the commented one)::

    name = "tune_salsa_eyeriss"
    output = "results/tune_salsa_eyeriss"
    mapper = "salsa"
    arch = "eyeriss_like"            # accelerator preset or TOML file
    objective = "energy"             # cost-model objective: energy | latency | edp
    budget = 1000                    # SA proposals per (layer, seed) = chains x iterations
    seeds = [0, 1, 2, 3, 4]          # training seeds, every layer
    objectives = ["gap"]             # or ["gap", "evals_to_reach"] (a multi-objective study)
    reach_gap = 0.0                  # evals_to_reach: proposals until within this relative gap
    trials = 40                      # default of --trials
    parallel = 2                     # default of --parallel: trials in flight at once
    fixed = { normalise = "log" }    # mapper parameters held fixed

    [space]                          # the mapper's declared parameters (`sweep list mappers`)
    t0 = { low = 0.002, high = 1.0, log = true }
    rho = { low = 0.99, high = 0.9999 }
    chains = { choices = [1, 2, 4, 5] }   # restarts; iterations = budget // chains
    normalise = { choices = ["log", "zigzag"] }

    [sampler]                        # tpe (default) | cmaes | random
    name = "tpe"
    seed = 0

    [pruner]                         # median (default for one objective) | none
    name = "median"

    [training]
    network = "resnet34"
    layers = ["layer3.0.downsample", "layer4.0.conv1"]

    [heldout]
    network = "mobilenet_v2"
    layers = ["block4_dw", "block7_project"]
    seeds = [1000, 1001, 1002]       # distinct from the training seeds
    defaults = { t0 = 0.05, rho = 0.999, iterations = 1000, chains = 1 }   # the baseline

    [reference]
    max_orderings = 6_000_000        # exhaustive LOMA up to this many orderings, else a long SA run

    storage = "sqlite:///study.db"   # optional RDB URL; default: OUT/study.journal

Space entries: ``{low, high}`` (with optional ``log = true`` and, for ints, ``step``) for int and
float parameters, ``{choices = [...]}`` for any parameter. A tuned ``chains`` or ``iterations``
must divide ``budget`` for every value it can take (so every trial spends exactly ``budget``
proposals; `sweep.tune.objective`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costmodel.loopnest.arch import list_accelerators, load_accelerator
from costmodel.zoo import list_networks, load_network
from mappers import get_mapper
from mappers.base import Param
from mappers.annealing import RESERVED, TUNABLE_MAPPERS, derive_params
from sweep.common.errors import CampaignError, Finding
from sweep.config.validation import (NOT_FINITE, Bad, Findings, check_seed, check_seeds, check_table, is_finite,
                                     is_int, is_number, is_tune_campaign, read_toml)
from sweep.common.ids import stable_hash
from sweep.study import SAMPLERS as _ALL_SAMPLERS, sampler_names

__all__ = ["TuneCampaign", "SpaceParam", "load_tune_campaign", "parse_tune_campaign",
           "SAMPLERS", "PRUNERS", "TRIAL_OBJECTIVES"]

SAMPLERS = sampler_names("tune")   # (`sweep.study.SAMPLERS`)
PRUNERS = ("median", "none")
#: Study objectives: mean relative gap (minimise) and proposals to reach ``reach_gap`` (minimise).
TRIAL_OBJECTIVES = ("gap", "evals_to_reach")
_TOP = {"name", "description", "output", "mapper", "arch", "objective", "budget", "seeds", "objectives",
        "reach_gap", "trials", "parallel", "fixed", "space", "sampler", "pruner", "training", "heldout",
        "reference", "storage"}
_SAMPLER_KEYS = {"name", "seed", "n_startup_trials"}
_PRUNER_KEYS = {"name", "n_startup_trials", "n_warmup_steps"}
_REF_KEYS = {"max_orderings", "fallback_chains", "fallback_iterations", "shards"}
_MAX_ENUM = 100_000  # int ranges of chains / iterations are enumerated to check divisibility


@dataclass(frozen=True)
class SpaceParam:
    """One dimension of the search space: ``kind`` "float" | "int" | "categorical"."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: int | None = None
    choices: tuple = ()

    def values(self) -> list | None:
        """Every value it can take (categorical or int), None for a float range."""
        if self.kind == "categorical":
            return list(self.choices)
        if self.kind == "int":
            return list(range(int(self.low), int(self.high) + 1, int(self.step or 1)))
        return None


@dataclass(frozen=True)
class TuneCampaign:
    """A validated tuning campaign (see the module docstring for every field's meaning)."""

    name: str
    source: str
    output: Path
    mapper: str
    arch: str
    objective: str
    budget: int
    seeds: tuple[int, ...]
    objectives: tuple[str, ...]
    reach_gap: float
    trials: int
    parallel: int
    fixed: dict[str, Any]
    space: tuple[SpaceParam, ...]
    sampler: dict[str, Any]
    pruner: dict[str, Any]
    training: tuple[str, tuple[str, ...]]      # (network, layer names)
    heldout: tuple[str, tuple[str, ...]]
    heldout_seeds: tuple[int, ...]
    defaults: dict[str, Any]
    reference: dict[str, int]
    storage: str | None = None
    description: str = ""
    raw: dict = field(default_factory=dict, repr=False)

    def resolved_config(self) -> dict[str, Any]:
        """Everything that determines the study's trials (not: trials, parallel, output)."""
        return {"kind": "tune", "name": self.name, "mapper": self.mapper, "arch": self.arch,
                "objective": self.objective, "budget": self.budget, "seeds": list(self.seeds),
                "objectives": list(self.objectives), "reach_gap": self.reach_gap, "fixed": self.fixed,
                "space": [vars(s) | {"choices": list(s.choices)} for s in self.space],
                "sampler": self.sampler, "pruner": self.pruner,
                "training": [self.training[0], list(self.training[1])],
                "heldout": [self.heldout[0], list(self.heldout[1])], "heldout_seeds": list(self.heldout_seeds),
                "defaults": self.defaults, "reference": self.reference}

    def config_hash(self) -> str:
        """sha256 of `resolved_config` (stable JSON)."""
        return stable_hash(self.resolved_config())



#: Keys of a campaign of tasks (`sweep run`) that a tuning campaign never has.
_TASK_TABLES = frozenset({"architectures", "mappers", "networks"})


def load_tune_campaign(path: str | Path, output: str | Path | None = None) -> TuneCampaign:
    """Read and validate a tuning campaign; ``output`` overrides its ``output`` (``--out``).

    Raises:
        CampaignError: unreadable, not TOML, or any problem (all listed, with key and value).
    """
    p = Path(path)
    return parse_tune_campaign(read_toml(p), str(p), p.parent, output)


def parse_tune_campaign(data: dict, source: str = "<tune campaign>", base_dir: Path | None = None,
                        output: str | Path | None = None) -> TuneCampaign:
    """Validate parsed TOML ``data``; see `load_tune_campaign`. Each table (and group of top-level
    keys) has its own function; every finding is collected before the one `CampaignError`."""
    base_dir = base_dir or Path(".")
    if isinstance(data, dict) and not is_tune_campaign(data) and _TASK_TABLES & set(data):
        keys = ", ".join(sorted(_TASK_TABLES & set(data)))
        raise CampaignError(source, [Finding("<file>", source, f"a campaign of tasks ({keys}; no [space] and "
                                             "[training] tables): run it with `sweep run`")])
    findings = Findings()
    bad = findings.bad
    check_table(data, "", _TOP, bad)
    name, out = _parse_name_output(data, output, bad)
    mapper, decl, arch, objective = _parse_target(data, base_dir, bad)
    budget, seeds, objectives, reach_gap, trials, parallel = _parse_study(data, bad)
    fixed = data.get("fixed", {})
    if not isinstance(fixed, dict):
        bad("fixed", fixed, "expected a table of mapper parameters")
        fixed = {}
    _check_values(fixed, "fixed", decl, mapper, bad)
    space = _parse_space(data.get("space"), decl, mapper, budget, fixed, bad)
    sampler = _parse_sampler(data.get("sampler", {}), objectives, bad)
    pruner = _parse_pruner(data.get("pruner", {}), objectives, bad)
    training = _layers(data.get("training"), "training", bad)
    heldout, hseeds, defaults = _parse_heldout(data.get("heldout", {}), seeds, decl, mapper, fixed, budget,
                                               findings)
    ref = _parse_reference(data.get("reference", {}), bad)
    storage = data.get("storage")
    if storage is not None and (not isinstance(storage, str) or "://" not in storage):
        bad("storage", storage, "expected an RDB URL such as 'sqlite:///study.db' (default: the journal file in OUT)")
    findings.raise_if_any(source)
    return TuneCampaign(name=name, source=source, output=Path(out), mapper=mapper, arch=arch, objective=objective,
                        budget=budget, seeds=tuple(seeds), objectives=tuple(objectives), reach_gap=float(reach_gap),
                        trials=trials, parallel=parallel, fixed=dict(fixed), space=tuple(space), sampler=sampler,
                        pruner=pruner, training=training, heldout=heldout, heldout_seeds=tuple(hseeds),
                        defaults=dict(defaults), reference=ref, storage=storage,
                        description=str(data.get("description", "")), raw=data)


def _parse_name_output(data: dict, output: str | Path | None, bad: Bad) -> tuple[str, Any]:
    """``name`` (required) and ``output`` (``--out`` wins; default ``results/<name>``)."""
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", name, "required: a non-empty string")
        name = ""
    out = output if output is not None else data.get("output", f"results/{name}")
    if not isinstance(out, (str, Path)):
        bad("output", out, "expected a path string")
        out = "."
    return name, out


def _parse_target(data: dict, base_dir: Path, bad: Bad) -> tuple[Any, dict[str, Param], Any, Any]:
    """What is tuned for what: ``mapper`` (an annealer; its declared parameters), ``arch`` (a preset
    or a file, made relative to the campaign's folder) and the cost-model ``objective``."""
    mapper = data.get("mapper")
    decl = {}
    if mapper not in TUNABLE_MAPPERS:
        bad("mapper", mapper, f"required: one of {list(TUNABLE_MAPPERS)} (the annealers)")
    else:
        decl = {p.name: p for p in get_mapper(mapper).params}
    arch = data.get("arch", "eyeriss_like")
    _check_arch(arch, base_dir, bad)
    if isinstance(arch, str) and arch not in list_accelerators():
        arch = str(base_dir / arch)  # a user file, relative to the campaign's folder
    objective = data.get("objective", "energy")
    if objective not in ("energy", "latency", "edp"):
        bad("objective", objective, "expected one of ['energy', 'latency', 'edp']")
    return mapper, decl, arch, objective


def _parse_study(data: dict, bad: Bad) -> tuple[int, list[int], list[str], float, Any, Any]:
    """The study's top-level settings: ``budget``, ``seeds``, ``objectives``, ``reach_gap``,
    ``trials`` and ``parallel``."""
    budget = data.get("budget", 1000)
    if not is_int(budget, 1, 10**9):
        bad("budget", budget, "expected an integer in [1, 1e9]: SA proposals per (layer, seed)")
        budget = 1000
    seeds = _seeds(data.get("seeds", [0, 1, 2]), "seeds", bad)
    objectives = data.get("objectives", ["gap"])
    if not isinstance(objectives, list) or not objectives or objectives[0] != "gap" or \
            any(o not in TRIAL_OBJECTIVES for o in objectives) or len(set(objectives)) != len(objectives):
        bad("objectives", objectives, f"expected ['gap'] or ['gap', 'evals_to_reach'] ({list(TRIAL_OBJECTIVES)})")
        objectives = ["gap"]
    reach_gap = data.get("reach_gap", 0.0)
    if is_number(reach_gap) and not is_finite(reach_gap):
        bad("reach_gap", reach_gap, NOT_FINITE)
        reach_gap = 0.0
    elif not is_number(reach_gap) or not 0 <= reach_gap < 10:
        bad("reach_gap", reach_gap, "expected a relative gap in [0, 10), e.g. 0.01 for 1 %")
        reach_gap = 0.0
    trials = data.get("trials", 40)
    if not is_int(trials, 1, 10**6):
        bad("trials", trials, "expected an integer >= 1")
    parallel = data.get("parallel", 2)
    if not is_int(parallel, 1, 4096):
        bad("parallel", parallel, "expected an integer in [1, 4096]")
    return budget, seeds, objectives, reach_gap, trials, parallel


def _parse_sampler(raw: Any, objectives: list[str], bad: Bad) -> dict[str, Any]:
    """``[sampler]``: Optuna's sampler (``name``, ``seed``, ``n_startup_trials``)."""
    sampler = check_table(raw, "sampler", _SAMPLER_KEYS, bad)
    sampler.setdefault("name", "tpe")
    sampler.setdefault("seed", 0)
    if sampler["name"] not in SAMPLERS:
        bad("sampler.name", sampler["name"], f"expected one of {list(SAMPLERS)}")
    check_seed(sampler["seed"], "sampler.seed", bad)
    if "n_startup_trials" in sampler and not is_int(sampler["n_startup_trials"], 0):
        bad("sampler.n_startup_trials", sampler["n_startup_trials"], "expected an integer >= 0")
    info = _ALL_SAMPLERS.get(sampler["name"])
    if info is not None and not info.multi_objective and len(objectives) > 1:
        bad("sampler.name", sampler["name"], f"{info.help} is single-objective; use one of "
            f"{[n for n in SAMPLERS if _ALL_SAMPLERS[n].multi_objective]} with two objectives")
    return sampler


def _parse_pruner(raw: Any, objectives: list[str], bad: Bad) -> dict[str, Any]:
    """``[pruner]``: Optuna's pruner (``name``, ``n_startup_trials``, ``n_warmup_steps``)."""
    pruner = check_table(raw, "pruner", _PRUNER_KEYS, bad)
    pruner.setdefault("name", "median" if len(objectives) == 1 else "none")
    if pruner["name"] not in PRUNERS:
        bad("pruner.name", pruner["name"], f"expected one of {list(PRUNERS)}")
    elif pruner["name"] != "none" and len(objectives) > 1:
        bad("pruner.name", pruner["name"], "Optuna cannot prune multi-objective trials; use 'none'")
    for k in ("n_startup_trials", "n_warmup_steps"):
        if k in pruner and not is_int(pruner[k], 0):
            bad(f"pruner.{k}", pruner[k], "expected an integer >= 0")
    return pruner


def _parse_heldout(raw: Any, seeds: list[int], decl: dict, mapper: Any, fixed: dict, budget: int,
                   findings: Findings) -> tuple[tuple[str, tuple[str, ...]], list[int], dict]:
    """``[heldout]``: the held-out layers, their ``seeds`` (distinct from the training seeds) and the
    baseline parameters ``defaults`` (which must spend the same budget); when nothing else is
    wrong, the baseline's derived parameters are checked too."""
    bad = findings.bad
    heldout = _layers(raw, "heldout", bad, extra={"seeds", "defaults"})
    hseeds = _seeds(raw.get("seeds", [1000 + i for i in range(10)]) if isinstance(raw, dict)
                    else [1000], "heldout.seeds", bad)
    if set(hseeds) & set(seeds):
        bad("heldout.seeds", list(hseeds), f"must be distinct from the training seeds {list(seeds)}")
    defaults = raw.get("defaults") if isinstance(raw, dict) else None
    if defaults is None:
        defaults = {"t0": 0.05, "rho": 0.999, "iterations": budget, "chains": 1}  # SALSA sec. V-A at the budget
    if not isinstance(defaults, dict):
        bad("heldout.defaults", defaults, "expected a table of mapper parameters")
        defaults = {}
    _check_values(defaults, "heldout.defaults", decl, mapper, bad)
    if decl and not findings:
        try:
            derive_params(mapper, defaults, fixed, budget)
        except ValueError as e:
            bad("heldout.defaults", defaults, f"{e} (the baseline must spend the same budget)")
    return heldout, hseeds, defaults


def _parse_reference(raw: Any, bad: Bad) -> dict[str, int]:
    """``[reference]``: how the layers' reference optima are computed (positive integers)."""
    ref = check_table(raw, "reference", _REF_KEYS, bad)
    ref = {"max_orderings": 2_000_000, "fallback_chains": 8, "fallback_iterations": 20_000, "shards": 2, **ref}
    for k, v in ref.items():
        if not is_int(v, 1, 10**12):
            bad(f"reference.{k}", v, "expected a positive integer")
    return ref


def _check_arch(arch, base_dir: Path, bad: Bad) -> None:
    if not isinstance(arch, str):
        bad("arch", arch, "expected an accelerator preset name or a TOML file path")
        return
    target = arch if arch in list_accelerators() else str(base_dir / arch)
    try:
        load_accelerator(target)
    except (OSError, ValueError) as e:
        bad("arch", arch, f"{e}; presets: {list_accelerators()}")


def _seeds(v, key: str, bad: Bad) -> list[int]:
    """A list of distinct seeds at ``key`` by the one seed rule (`check_seeds`); [0] if bad."""
    return list(v) if check_seeds(v, key, bad, distinct=True) else [0]


def _check_values(values: dict, key: str, decl: dict, mapper, bad: Bad) -> None:
    """Mapper parameters given at ``key`` (``fixed``, ``heldout.defaults``), each checked by its
    declared `mappers.base.Param` (which refuses NaN and infinities too)."""
    for k, v in values.items():
        if k in RESERVED:
            bad(f"{key}.{k}", v, "set by the tuner (seeds from the seed lists, SA engine), not by the campaign")
        elif decl and k not in decl:
            bad(f"{key}.{k}", v, f"unknown parameter of {mapper}; known: {sorted(decl)}")
        elif decl:
            msg = decl[k].check(v)
            if msg:
                bad(f"{key}.{k}", v, msg)


def _parse_space(raw, decl, mapper, budget, fixed, bad: Bad) -> list[SpaceParam]:
    """``[space]``: the tuned parameters (see the module docstring)."""
    if not isinstance(raw, dict) or not raw:
        bad("space", raw, "required: a table of parameters to tune, e.g. t0 = { low = 0.001, high = 1, log = true }")
        return []
    out = []
    for k, spec in raw.items():
        key = f"space.{k}"
        if k in RESERVED:
            bad(key, spec, "set by the tuner, cannot be tuned")
            continue
        if decl and k not in decl:
            bad(key, spec, f"unknown parameter of {mapper}; known: {sorted(decl)}")
            continue
        if k in fixed:
            bad(key, spec, "also given in 'fixed'; a parameter is either tuned or fixed")
            continue
        if not isinstance(spec, dict):
            bad(key, spec, "expected {low = .., high = ..[, log = true]} or {choices = [..]}")
            continue
        sp = _space_param(k, spec, decl.get(k), key, bad)
        if sp is not None and (k not in ("chains", "iterations") or _divides_budget(sp, spec, key, budget, bad)):
            out.append(sp)
    names = {s.name for s in out}
    if {"chains", "iterations"} <= names:
        bad("space.iterations", raw.get("iterations"), "tune chains or iterations, not both (the other = budget // it)")
    return out


def _divides_budget(sp: SpaceParam, spec: dict, key: str, budget: int, bad: Bad) -> bool:
    """A tuned ``chains`` or ``iterations`` divides ``budget`` for every value it can take."""
    vals = sp.values()
    if vals is None or len(vals) > _MAX_ENUM:
        bad(key, spec, "chains / iterations must be ints with few values (they must divide the budget)")
        return False
    nd = [x for x in vals if not isinstance(x, int) or x <= 0 or budget % x]
    if nd:
        bad(key, spec, f"values {nd[:5]} do not divide budget = {budget}; every trial must spend exactly "
            "the budget (chains x iterations)")
        return False
    return True


def _space_param(k: str, spec: dict, p: Param | None, key: str, bad: Bad) -> SpaceParam | None:
    """One ``[space]`` entry: ``{choices = [..]}`` or a ``{low, high[, log][, step]}`` range of
    the declared parameter ``p`` (None: the mapper is unknown); None (and a finding) if unusable."""
    extra = set(spec) - {"low", "high", "log", "step", "choices"}
    if extra:
        bad(f"{key}.{sorted(extra)[0]}", spec[sorted(extra)[0]], "unknown key; known: low, high, log, step, choices")
        return None
    if "choices" in spec:
        return _space_choices(k, spec, p, key, bad)
    if p is not None and p.type not in ("int", "float"):
        bad(key, spec, f"{k} is a {p.type}: give {{choices = [..]}}")
        return None
    lo, hi = spec.get("low"), spec.get("high")
    if not is_number(lo) or not is_number(hi):
        bad(key, spec, "low and high: numbers")
        return None
    for end, v in (("low", lo), ("high", hi)):  # NaN / inf: refused by the parameter's own check
        if not math.isfinite(v):
            bad(f"{key}.{end}", v, (p.check(v) if p is not None else None) or NOT_FINITE)
            return None
    if lo > hi:
        bad(f"{key}.low", lo, f"low > high ({hi})")
        return None
    log = spec.get("log", False)
    if not isinstance(log, bool) or (log and lo <= 0):
        bad(f"{key}.log", log, "log = true needs low > 0 (and a bool)")
        return None
    if p is not None:
        for end, v in (("low", lo), ("high", hi)):
            msg = p.check(int(v) if p.type == "int" and float(v).is_integer() else v)
            if msg:
                bad(f"{key}.{end}", v, msg)
                return None
    kind = p.type if p is not None else ("int" if isinstance(lo, int) and isinstance(hi, int) else "float")
    step = spec.get("step")
    if step is not None and (kind != "int" or not is_int(step, 1) or log):
        bad(f"{key}.step", step, "step: a positive integer, for int parameters without log")
        return None
    if kind == "int" and (not isinstance(lo, int) or not isinstance(hi, int)):
        bad(key, spec, f"{k} is an int: low and high must be integers")
        return None
    return SpaceParam(k, kind, float(lo) if kind == "float" else lo, float(hi) if kind == "float" else hi,
                      log, step)


def _space_choices(k: str, spec: dict, p: Param | None, key: str, bad: Bad) -> SpaceParam | None:
    """``{choices = [..]}``: a non-empty list of values, each allowed by ``p``."""
    ch = spec["choices"]
    if set(spec) != {"choices"} or not isinstance(ch, list) or not ch:
        bad(key, spec, "choices: a non-empty list, without low/high")
        return None
    for c in ch:
        msg = p.check(c) if p is not None else None
        if msg:
            bad(f"{key}.choices", c, msg)
            return None
    return SpaceParam(k, "categorical", choices=tuple(ch))


def _layers(v, key: str, bad: Bad, extra=frozenset()) -> tuple[str, tuple[str, ...]]:
    """``[training]`` / ``[heldout]``: a zoo ``network`` and unique-layer names of it."""
    if not isinstance(v, dict):
        bad(key, v, "required: a table {network = \"resnet34\", layers = [..]}")
        return ("", ())
    for k in v:
        if k not in {"network", "layers"} | set(extra):
            bad(f"{key}.{k}", v[k], f"unknown key; known: {sorted({'network', 'layers'} | set(extra))}")
    net = v.get("network")
    if net not in list_networks():
        bad(f"{key}.network", net, f"unknown zoo network; known: {list_networks()}")
        return ("", ())
    names = [l.name for l, _ in load_network(net).unique()]
    layers = v.get("layers")
    if not isinstance(layers, list) or not layers or not all(isinstance(x, str) for x in layers) \
            or len(set(layers)) != len(layers):
        bad(f"{key}.layers", layers, "expected a non-empty list of distinct layer names")
        return (net, ())
    for i, lay in enumerate(layers):
        if lay not in names:
            bad(f"{key}.layers[{i}]", lay, f"no such unique layer in {net}; known: {names}")
    return (net, tuple(layers))
