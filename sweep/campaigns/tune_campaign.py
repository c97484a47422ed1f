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
proposals; `mappers.tuning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.errors import CampaignError, Problem
from sweep.ids import stable_hash

__all__ = ["TuneCampaign", "SpaceParam", "load_tune_campaign", "parse_tune_campaign", "is_tune_campaign",
           "SAMPLERS", "PRUNERS", "TRIAL_OBJECTIVES"]

SAMPLERS = ("tpe", "cmaes", "random")
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


def is_tune_campaign(data: dict) -> bool:
    """A parsed TOML file is a tuning campaign if it has a ``space`` table and a ``training`` table."""
    return isinstance(data, dict) and "space" in data and "training" in data


def load_tune_campaign(path: str | Path, output: str | Path | None = None) -> TuneCampaign:
    """Read and validate a tuning campaign; ``output`` overrides its ``output`` (``--out``).

    Raises:
        CampaignError: unreadable, not TOML, or any problem (all listed, with key and value).
    """
    from sweep.campaigns.campaign import read_toml

    p = Path(path)
    return parse_tune_campaign(read_toml(p), str(p), p.parent, output)


def _int(v, lo, hi=None) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_tune_campaign(data: dict, source: str = "<tune campaign>", base_dir: Path | None = None,
                        output: str | Path | None = None) -> TuneCampaign:
    """Validate parsed TOML ``data``; see `load_tune_campaign`."""
    from mappers import get_mapper
    from mappers.tuning import RESERVED, TUNABLE_MAPPERS

    base_dir = base_dir or Path(".")
    probs: list[Problem] = []
    bad = lambda key, value, msg: probs.append(Problem(key, value, msg))  # noqa: E731
    _table(data, "", _TOP, bad)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", name, "required: a non-empty string")
        name = ""
    out = output if output is not None else data.get("output", f"results/{name}")
    if not isinstance(out, (str, Path)):
        bad("output", out, "expected a path string")
        out = "."
    mapper = data.get("mapper")
    decl = {}
    if mapper not in TUNABLE_MAPPERS:
        bad("mapper", mapper, f"required: one of {list(TUNABLE_MAPPERS)} (the annealers)")
    else:
        decl = {p.name: p for p in get_mapper(mapper).params}
    arch = data.get("arch", "eyeriss_like")
    _check_arch(arch, base_dir, bad)
    if isinstance(arch, str) and arch not in _presets():
        arch = str(base_dir / arch)  # a user file, relative to the campaign's folder
    objective = data.get("objective", "energy")
    if objective not in ("energy", "latency", "edp"):
        bad("objective", objective, "expected one of ['energy', 'latency', 'edp']")
    budget = data.get("budget", 1000)
    if not _int(budget, 1, 10**9):
        bad("budget", budget, "expected an integer in [1, 1e9]: SA proposals per (layer, seed)")
        budget = 1000
    seeds = _seeds(data.get("seeds", [0, 1, 2]), "seeds", bad)
    objectives = data.get("objectives", ["gap"])
    if not isinstance(objectives, list) or not objectives or objectives[0] != "gap" or \
            any(o not in TRIAL_OBJECTIVES for o in objectives) or len(set(objectives)) != len(objectives):
        bad("objectives", objectives, f"expected ['gap'] or ['gap', 'evals_to_reach'] ({list(TRIAL_OBJECTIVES)})")
        objectives = ["gap"]
    reach_gap = data.get("reach_gap", 0.0)
    if not _num(reach_gap) or not 0 <= reach_gap < 10:
        bad("reach_gap", reach_gap, "expected a relative gap in [0, 10), e.g. 0.01 for 1 %")
        reach_gap = 0.0
    trials = data.get("trials", 40)
    if not _int(trials, 1, 10**6):
        bad("trials", trials, "expected an integer >= 1")
    parallel = data.get("parallel", 2)
    if not _int(parallel, 1, 4096):
        bad("parallel", parallel, "expected an integer in [1, 4096]")

    fixed = data.get("fixed", {})
    if not isinstance(fixed, dict):
        bad("fixed", fixed, "expected a table of mapper parameters")
        fixed = {}
    _check_values(fixed, "fixed", decl, mapper, RESERVED, bad)
    space = _parse_space(data.get("space"), decl, mapper, RESERVED, budget, fixed, bad)

    sampler = _table(data.get("sampler", {}), "sampler", _SAMPLER_KEYS, bad)
    sampler.setdefault("name", "tpe")
    sampler.setdefault("seed", 0)
    if sampler["name"] not in SAMPLERS:
        bad("sampler.name", sampler["name"], f"expected one of {list(SAMPLERS)}")
    if not _int(sampler["seed"], 0):
        bad("sampler.seed", sampler["seed"], "expected an integer >= 0")
    if "n_startup_trials" in sampler and not _int(sampler["n_startup_trials"], 0):
        bad("sampler.n_startup_trials", sampler["n_startup_trials"], "expected an integer >= 0")
    if sampler["name"] == "cmaes" and len(objectives) > 1:
        bad("sampler.name", "cmaes", "CMA-ES is single-objective; use tpe or random with two objectives")
    pruner = _table(data.get("pruner", {}), "pruner", _PRUNER_KEYS, bad)
    pruner.setdefault("name", "median" if len(objectives) == 1 else "none")
    if pruner["name"] not in PRUNERS:
        bad("pruner.name", pruner["name"], f"expected one of {list(PRUNERS)}")
    elif pruner["name"] != "none" and len(objectives) > 1:
        bad("pruner.name", pruner["name"], "Optuna cannot prune multi-objective trials; use 'none'")
    for k in ("n_startup_trials", "n_warmup_steps"):
        if k in pruner and not _int(pruner[k], 0):
            bad(f"pruner.{k}", pruner[k], "expected an integer >= 0")

    training = _layers(data.get("training"), "training", bad)
    heldout_raw = data.get("heldout", {})
    heldout = _layers(heldout_raw, "heldout", bad, extra={"seeds", "defaults"})
    hseeds = _seeds(heldout_raw.get("seeds", [1000 + i for i in range(10)]) if isinstance(heldout_raw, dict)
                    else [1000], "heldout.seeds", bad)
    if set(hseeds) & set(seeds):
        bad("heldout.seeds", list(hseeds), f"must be distinct from the training seeds {list(seeds)}")
    defaults = heldout_raw.get("defaults") if isinstance(heldout_raw, dict) else None
    if defaults is None:
        defaults = {"t0": 0.05, "rho": 0.999, "iterations": budget, "chains": 1}  # SALSA sec. V-A at the budget
    if not isinstance(defaults, dict):
        bad("heldout.defaults", defaults, "expected a table of mapper parameters")
        defaults = {}
    _check_values(defaults, "heldout.defaults", decl, mapper, RESERVED, bad)
    if decl and not probs:
        try:
            from mappers.tuning import derive_params
            derive_params(mapper, defaults, fixed, budget)
        except ValueError as e:
            bad("heldout.defaults", defaults, f"{e} (the baseline must spend the same budget)")

    ref = _table(data.get("reference", {}), "reference", _REF_KEYS, bad)
    ref = {"max_orderings": 2_000_000, "fallback_chains": 8, "fallback_iterations": 20_000, "shards": 2, **ref}
    for k, v in ref.items():
        if not _int(v, 1, 10**12):
            bad(f"reference.{k}", v, "expected a positive integer")
    storage = data.get("storage")
    if storage is not None and (not isinstance(storage, str) or "://" not in storage):
        bad("storage", storage, "expected an RDB URL such as 'sqlite:///study.db' (default: the journal file in OUT)")

    if probs:
        raise CampaignError(source, probs)
    return TuneCampaign(name=name, source=source, output=Path(out), mapper=mapper, arch=arch, objective=objective,
                        budget=budget, seeds=tuple(seeds), objectives=tuple(objectives), reach_gap=float(reach_gap),
                        trials=trials, parallel=parallel, fixed=dict(fixed), space=tuple(space), sampler=sampler,
                        pruner=pruner, training=training, heldout=heldout, heldout_seeds=tuple(hseeds),
                        defaults=dict(defaults), reference=ref, storage=storage,
                        description=str(data.get("description", "")), raw=data)


def _presets() -> list[str]:
    from costmodel.loopnest.arch import list_accelerators
    return list_accelerators()


def _check_arch(arch, base_dir: Path, bad) -> None:
    from costmodel.loopnest.arch import list_accelerators, load_accelerator
    if not isinstance(arch, str):
        bad("arch", arch, "expected an accelerator preset name or a TOML file path")
        return
    target = arch if arch in list_accelerators() else str(base_dir / arch)
    try:
        load_accelerator(target)
    except (OSError, ValueError) as e:
        bad("arch", arch, f"{e}; presets: {list_accelerators()}")


def _seeds(v, key, bad) -> list[int]:
    if not isinstance(v, list) or not v or not all(_int(s, 0) for s in v) or len(set(v)) != len(v):
        bad(key, v, "expected a non-empty list of distinct integers >= 0")
        return [0]
    return list(v)


def _table(v, key, known, bad) -> dict:
    if not isinstance(v, dict):
        bad(key, v, "expected a table")
        return {}
    for k in v:
        if k not in known:
            bad(f"{key}.{k}" if key else k, v[k], f"unknown key; known: {sorted(known)}")
    return {k: x for k, x in v.items() if k in known}


def _check_values(values: dict, key: str, decl: dict, mapper, reserved, bad) -> None:
    for k, v in values.items():
        if k in reserved:
            bad(f"{key}.{k}", v, "set by the tuner (seeds from the seed lists, SA engine), not by the campaign")
        elif decl and k not in decl:
            bad(f"{key}.{k}", v, f"unknown parameter of {mapper}; known: {sorted(decl)}")
        elif decl:
            msg = decl[k].check(v)
            if msg:
                bad(f"{key}.{k}", v, msg)


def _parse_space(raw, decl, mapper, reserved, budget, fixed, bad) -> list[SpaceParam]:
    if not isinstance(raw, dict) or not raw:
        bad("space", raw, "required: a table of parameters to tune, e.g. t0 = { low = 0.001, high = 1, log = true }")
        return []
    out = []
    for k, spec in raw.items():
        key = f"space.{k}"
        if k in reserved:
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
        p = decl.get(k)
        sp = _space_param(k, spec, p, key, bad)
        if sp is None:
            continue
        if k in ("chains", "iterations"):
            vals = sp.values()
            if vals is None or len(vals) > _MAX_ENUM:
                bad(key, spec, "chains / iterations must be ints with few values (they must divide the budget)")
                continue
            nd = [x for x in vals if not isinstance(x, int) or x <= 0 or budget % x]
            if nd:
                bad(key, spec, f"values {nd[:5]} do not divide budget = {budget}; every trial must spend exactly "
                    "the budget (chains x iterations)")
                continue
        out.append(sp)
    names = {s.name for s in out}
    if {"chains", "iterations"} <= names:
        bad("space.iterations", raw.get("iterations"), "tune chains or iterations, not both (the other = budget // it)")
    return out


def _space_param(k, spec, p, key, bad) -> SpaceParam | None:
    extra = set(spec) - {"low", "high", "log", "step", "choices"}
    if extra:
        bad(f"{key}.{sorted(extra)[0]}", spec[sorted(extra)[0]], "unknown key; known: low, high, log, step, choices")
        return None
    if "choices" in spec:
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
    if p is not None and p.type not in ("int", "float"):
        bad(key, spec, f"{k} is a {p.type}: give {{choices = [..]}}")
        return None
    lo, hi = spec.get("low"), spec.get("high")
    if not _num(lo) or not _num(hi):
        bad(key, spec, "low and high: numbers")
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
    if step is not None and (kind != "int" or not _int(step, 1) or log):
        bad(f"{key}.step", step, "step: a positive integer, for int parameters without log")
        return None
    if kind == "int" and (not isinstance(lo, int) or not isinstance(hi, int)):
        bad(key, spec, f"{k} is an int: low and high must be integers")
        return None
    return SpaceParam(k, kind, float(lo) if kind == "float" else lo, float(hi) if kind == "float" else hi,
                      log, step)


def _layers(v, key, bad, extra=frozenset()) -> tuple[str, tuple[str, ...]]:
    from costmodel.zoo import list_networks, load_network
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
