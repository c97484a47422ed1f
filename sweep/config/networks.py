"""The ``networks`` key of a campaign: zoo names, user files (CSV in the zoo format, or ONNX
models read by `costmodel.importers.onnx`) and transformer steps -> `Network` objects.

A transformer step is a table ``{model = "llama3_8b", phase = "decode", batch = [1, 8, 32],
context = [512, 4096]}``: ``model`` a zoo transformer (or ``config = "models/x.json"``, a Hugging
Face config.json, relative to the campaign file; `costmodel.transformer.hf`), every other key a parameter of
`costmodel.transformer.build_transformer` (``phase``, ``batch``, ``seq``, ``context``,
``weight_bits``, ``act_bits``, ``kv_bits``, ``attention``, ``fusion``, ``query_tile``, ``kv_tile``,
``batched_attention``, and ``tp``, ``pp``, ``ep``: one chip's share of the step split over chips, whose
figures are the system's, `costmodel.system`) given as one
value or a list; the table expands to the
product of its lists, in the order the keys are written (the last varies fastest), each point a
network of its own (``llama3_8b/decode/b8/ctx4096``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable

from costmodel.importers.errors import InputFormatError
from costmodel.workload import Network

__all__ = ["parse_networks", "parse_workload", "mix_networks", "parse_system", "CAMPAIGN_SYSTEM_KEYS"]

#: The keys of a campaign's ``[system]`` table: how the chips of its split steps are joined (the splits
#: themselves are the steps' ``tp``, ``pp``, ``ep``).
CAMPAIGN_SYSTEM_KEYS = ("interconnect", "replicas", "launch_overhead_us")


#: The keys that name a transformer-step table's model: a zoo model or a Hugging Face config.json.
MODEL_KEYS = ("model", "config")
#: The keys of a transformer-step table besides ``model`` / ``config``.
STEP_KEYS = ("phase", "batch", "seq", "context", "weight_bits", "act_bits", "kv_bits", "attention", "fusion",
             "query_tile", "kv_tile", "batched_attention", "tp", "pp", "ep")


def _transformer_steps(item: dict, key: str, bad: Callable[[str, Any, str], None],
                       base_dir: Path = Path(".")) -> list[Network]:
    """The networks of one ``{model = ..., <param> = value or [values]}`` or ``{config =
    "path/config.json", ...}`` table (module docstring)."""
    from costmodel.zoo import is_transformer, load_network, load_network_file

    if "model" in item and "config" in item:
        bad(f"{key}.config", item["config"], "give a zoo model (model = ...) or a config.json (config = ...), not both")
        return []
    model = item.get("model", item.get("config"))
    if "config" in item:
        path = Path(model) if isinstance(model, str) else None
        if path is None or path.suffix.lower() != ".json":
            bad(f"{key}.config", model, "expected the path of a Hugging Face config.json (*.json)")
            return []
        path = path if path.is_absolute() else base_dir / path
        if not path.is_file():
            bad(f"{key}.config", model, f"no such file: {path}")
            return []

        def build(**params: Any) -> Network:
            return load_network_file(path, **params)
    elif not isinstance(model, str) or not is_transformer(model):
        from costmodel.transformer import list_transformers
        bad(f"{key}.model", model, f"expected a zoo transformer: {list_transformers()}, or config = \"config.json\"")
        return []
    else:
        def build(**params: Any) -> Network:
            return load_network(model, **params)
    axes: list[tuple[str, list]] = []
    for k, v in item.items():
        if k in MODEL_KEYS:
            continue
        if k not in STEP_KEYS:
            bad(f"{key}.{k}", v, f"no such parameter of a transformer step; known: {list(STEP_KEYS)}")
            return []
        vals = v if isinstance(v, list) else [v]
        if not vals:
            bad(f"{key}.{k}", v, "an empty list")
            return []
        axes.append((k, vals))
    out: list[Network] = []
    for combo in itertools.product(*(vals for _, vals in axes)):
        params = dict(zip((k for k, _ in axes), combo))
        try:
            out.append(build(**params))
        except InputFormatError as e:  # the config.json itself (its field named)
            bad(f"{key}.config", model, str(e))
            return out
        except ValueError as e:
            k = next((k for k in params if str(e).startswith(k) or f"{k} " in str(e) or f"'{k}'" in str(e)), "model")
            bad(f"{key}.{k}", params.get(k, model), str(e))
            return out
    return out


def unknown_network(name: str, known: list[str]) -> str:
    """The message for a network name not in ``known``: the closest names (difflib), then all."""
    import difflib
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f" (closest: {', '.join(close)})" if close else ""
    return f"unknown network{hint}; known: {known}"


def parse_networks(value: Any, base_dir: Path, bad: Callable[[str, Any, str], None]) -> list[Network]:
    """Resolve ``networks = ["resnet50", {file = "my_net.csv"}, {file = "model.onnx"}]`` (relative
    paths against ``base_dir``); report problems through ``bad`` (a bad ONNX file: the file and node)."""
    from costmodel.zoo import list_networks, load_network, load_network_file

    if not isinstance(value, list) or not value:
        bad("networks", value, "required: a non-empty list of zoo names (see `sweep list networks`), "
            "tables {file = \"path.csv\"} / {file = \"model.onnx\"}, or transformer steps "
            "{model = \"llama3_8b\", phase = \"decode\", batch = [1, 8], context = 4096}")
        return []
    known = list_networks()
    nets: list[Network] = []
    for i, item in enumerate(value):
        key = f"networks[{i}]"
        if isinstance(item, str):
            if item not in known:
                bad(key, item, unknown_network(item, known))
                continue
            nets.append(load_network(item))
        elif isinstance(item, dict) and ("model" in item or "config" in item):
            nets.extend(_transformer_steps(item, key, bad, base_dir))
        elif isinstance(item, dict):
            extra = set(item) - {"file"}
            if extra or "file" not in item or not isinstance(item["file"], str):
                bad(key, item, "expected a transformer step {model = \"llama3_8b\", phase = \"decode\", ...} "
                    "(or {config = \"config.json\", phase = ...}: a Hugging Face config) "
                    "or a table {file = \"path.csv\"} / {file = \"model.onnx\"}")
                continue
            path = (base_dir / item["file"]) if not Path(item["file"]).is_absolute() else Path(item["file"])
            try:
                nets.append(load_network_file(path))
            except (OSError, ValueError) as e:
                bad(f"{key}.file", item["file"], str(e))
        else:
            bad(key, item, "expected a zoo name or {file = \"path.csv\"} / {file = \"model.onnx\"}")
    names = [n.name for n in nets]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        bad("networks", value, f"network listed twice: {sorted(dup)}")
    return nets


_WORKLOAD_KEYS = ("model", "config", "prompt", "output_tokens", "output", "batch", "points", "fusion", "weight_bits",
                  "act_bits", "kv_bits")


def _workload_model(value: dict, base_dir: Path, bad: Callable[[str, Any, str], None]) -> tuple[str, Any] | None:
    """(name, `TransformerConfig` or None) of a ``[workload]`` table's model, as a campaign's networks
    take one (`_transformer_steps`): ``model`` a bundled decoder (config None), or ``model`` /
    ``config`` the path of a decoder's Hugging Face config.json (``*.json``, relative to
    ``base_dir``; its name `costmodel.transformer.hf.model_name`). None after reporting the problem
    through ``bad`` (``workload.model`` / ``workload.config``: both given, an unknown name, a missing
    or unreadable file, an encoder or a ViT, which have no decode step)."""
    from costmodel.transformer import is_config_file, list_transformers, read_hf_config, transformer_config
    decoders = [m for m in list_transformers() if transformer_config(m).kind == "decoder"]
    if "model" in value and "config" in value:
        bad("workload.config", value["config"], "give a zoo decoder or a config.json as model = ..., not both")
        return None
    key = "workload.config" if "config" in value else "workload.model"
    model = value.get("config", value.get("model"))
    want = (f"a serving mix needs a decoder: a zoo decoder {decoders}, or the path of a decoder's Hugging Face "
            "config.json (model = \"models/config.json\", relative to the campaign file)")
    if key == "workload.config" and not is_config_file(model):
        bad(key, model, f"expected the path of a Hugging Face config.json (*.json); {want}")
        return None
    if is_config_file(model):
        path = Path(model) if Path(model).is_absolute() else base_dir / model
        if not path.is_file():
            bad(key, model, f"no such file: {path}")
            return None
        try:
            cfg = read_hf_config(path)[0]
        except ValueError as e:  # HfConfigError: the file, the field and its value
            bad(key, model, str(e))
            return None
        name = cfg.name
    elif isinstance(model, str) and model in list_transformers():
        cfg, name = None, model
    else:
        from costmodel.zoo import list_networks
        why = "required" if model is None else (f"{model} is a network of layers, not a transformer"
                                                  if model in list_networks() else "unknown model")
        bad(key, model, f"{why}; {want}")
        return None
    kind = (cfg or transformer_config(name)).kind
    if kind != "decoder":  # `costmodel.transformer.step.resolve_step`: only a decoder decodes
        bad(key, model, f"{name} is an {kind} model: {'an encoder' if kind == 'encoder' else 'a ViT'} has no "
            f"decode step; {want}")
        return None
    return name, cfg


def parse_workload(value: Any, bad: Callable[[str, Any, str], None], base_dir: Path = Path(".")):
    """The ``[workload]`` table, a serving mix (`costmodel.llm.ServingMix`): ``model`` (a zoo
    decoder, or a decoder's Hugging Face config.json relative to ``base_dir``, the campaign file's
    folder; ``config``, the networks' spelling for a file, also read), ``prompt`` and
    ``output_tokens`` per request (``output``, its earlier spelling, still
    read: it shared its name with the campaign's result directory), ``batch`` requests served together
    (default 1), ``points`` decode contexts mapped (default 3), ``fusion`` how its steps are built
    (``fused``, the default, or ``unfused``), ``weight_bits`` / ``act_bits`` / ``kv_bits`` their
    precisions (bits; default the checkpoint's, else the accelerator's); None if absent. Problems go to
    ``bad`` naming ``workload.<key>`` (`_workload_model` for the model's)."""
    if value is None:
        return None
    from costmodel.llm import ServingMix
    if not isinstance(value, dict):
        bad("workload", value, "expected a table {model = \"llama3_8b\", prompt = 2048, output = 256, batch = 16}")
        return None
    for k in value:
        if k not in _WORKLOAD_KEYS:
            bad(f"workload.{k}", value[k], f"no such key; known: {list(_WORKLOAD_KEYS)}")
            return None
    got = _workload_model(value, base_dir, bad)
    if got is None:
        return None
    if "output" in value and "output_tokens" in value:
        bad("workload.output", value["output"], "the earlier spelling of output_tokens: give one of them")
        return None
    out_key = "output" if "output" in value else "output_tokens"  # `output`: campaigns before output_tokens
    for k in ("prompt", out_key):
        if k not in value:
            bad(f"workload.{k}", None, "required: tokens per request")
            return None
    try:
        return ServingMix(got[0], value["prompt"], value[out_key], value.get("batch", 1), value.get("points", 3),
                          value.get("fusion", "fused"), config=got[1], weight_bits=value.get("weight_bits"),
                          act_bits=value.get("act_bits"), kv_bits=value.get("kv_bits"))
    except ValueError as e:
        key = str(e).split(" = ")[0].replace("workload.output", f"workload.{out_key}")
        bad(key, value.get(key.split(".")[-1]), str(e).split(": ", 1)[-1])
        return None


def mix_networks(mix, bad: Callable[[str, Any, str], None], networks=()) -> list[Network]:
    """The steps a serving mix maps: its prefill (batch x prompt tokens), then a decode step at
    each of its contexts (`costmodel.llm.ServingMix.contexts`), built from its model
    (`costmodel.llm.ServingMix.spec`: a bundled name or the config read from a file). With
    ``networks`` (the campaign's), only the steps not among them; a network of a step's name that is
    another step (a config.json named like a zoo model, with other shapes) is reported through
    ``bad`` (``workload.model``), as two networks of one name are."""
    from costmodel.transformer import build_transformer
    try:
        f = mix.step_options()
        steps = [build_transformer(mix.spec, phase="prefill", batch=mix.batch, seq=mix.prompt, **f),
                 *(build_transformer(mix.spec, phase="decode", batch=mix.batch, context=c, **f)
                   for c in mix.contexts())]
    except ValueError as e:  # e.g. a prompt past a learned position table
        bad(f"workload.{str(e).split(':')[0]}", mix.to_dict(), str(e))
        return []
    have = {n.name: n for n in networks}
    same = ("layers", "repeats", "vector_ops", "vector_repeats")
    for n in steps:
        if n.name in have and any(getattr(n, k) != getattr(have[n.name], k) for k in same):
            bad("workload.model", mix.model, f"its step {n.name} is not the network of that name in `networks` "
                "(another model of the same name): rename the config.json")
    return [n for n in steps if n.name not in have]


def parse_system(value: Any, bad: Callable[[str, Any, str], None]):
    """The ``[system]`` table of a campaign (`CAMPAIGN_SYSTEM_KEYS`): ``interconnect`` (a bundled name or
    a table, `costmodel.system.interconnect.Interconnect`), ``replicas`` (copies of the model) and
    ``launch_overhead_us`` (the serving software's fixed cost per launch); the splits come from the
    steps (``tp``, ``pp``, ``ep``), micro-batches from `sweep map --micro-batches` only (a campaign maps
    each step at its batch). A `costmodel.system.serving.System` with those set, or None if absent;
    problems go to ``bad`` naming ``system.<key>``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        bad("system", value, f"expected a table with keys {list(CAMPAIGN_SYSTEM_KEYS)}")
        return None
    for k, v in value.items():
        if k not in CAMPAIGN_SYSTEM_KEYS:
            why = ("the splits are the steps' own: give tp / pp / ep on the networks' entries (lists for several)"
                   if k in ("tp", "pp", "ep", "chips") else
                   "a campaign maps each step at its batch; micro-batches: `sweep map --micro-batches`"
                   if k == "micro_batches" else f"no such key; known: {list(CAMPAIGN_SYSTEM_KEYS)}")
            bad(f"system.{k}", v, why)
            return None
    from costmodel.system.serving import System
    try:
        return System.from_dict(dict(value), "campaign")
    except ValueError as e:
        msg = str(e).split(": ", 1)[-1]
        key = next((f"system.{k}" for k in value if f".{k} " in msg or msg.startswith("interconnect")
                    and k == "interconnect"), "system")
        bad(key, value.get(key.split(".")[-1], value), msg)
        return None
