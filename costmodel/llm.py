"""The figures of an LLM inference step: DRAM traffic by what it carries (weights, KV cache,
activations) and the serving metrics (time to first token, time per output token, tokens/s,
energy per token).

A transformer step (`costmodel.transformer`) is one prefill of ``batch`` prompts of ``seq``
tokens, or one decode step of ``batch`` sequences (one new token each, attending to ``context``
cached tokens). Its layers run one after another; its vector operations run after them, except
those that overlap layers (fused ones, `costmodel.transformer.attention`), which run beside them
(`step_latency`); so:

* latency (s) = latency (cycles) / (clock_mhz x 10^6), the accelerator's clock;
* prefill: ``ttft_s`` = the step's latency (the first output token needs the whole prompt);
  ``tokens_per_s`` = prompt tokens processed per second = batch x seq / ttft_s;
  ``energy_per_token_j`` = energy / (batch x seq);
* decode: ``time_per_token_s`` = the step's latency (every sequence gets one token per step);
  ``tokens_per_s`` = batch / time_per_token_s; ``energy_per_token_j`` = energy / batch.

DRAM traffic of a matmul (`dram_traffic`) is read off the loop-nest model's cost report at the
outermost memory level (an unbounded level: DRAM): word accesses x the level's word width, of the
operands the DRAM serves for the layer (`costmodel.roofline.dram_bits`, the one count). Its W
operand carries weights, or the KV cache where ``layer.w_role == "kv_cache"`` (attention's score
and context matmuls); its I operand activations; its O operand activations, or new KV cache
entries where ``layer.o_role == "kv_cache"`` (the K and V projections write the cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["ROLES", "ServingMix", "dram_traffic", "energy_breakdown", "step_latency", "step_launches", "step_metrics"]

#: What DRAM traffic carries.
ROLES = ("weights", "kv_cache", "activations")


def dram_traffic(layer, arch, mapping) -> dict[str, float]:
    """Bits moved at the outermost memory level by one execution of ``layer`` under ``mapping``
    on ``arch``, by role: ``{"weights", "kv_cache", "activations"}`` (bits; reads and writes). A
    level with a capacity (``size_bits`` set: on chip) moves nothing off chip: all zeros.

    Raises:
        ValueError: the mapping is invalid on ``arch`` (the cost model's reason).
    """
    from costmodel.loopnest.reference import evaluate
    from costmodel.roofline import dram_bits

    rep = evaluate(layer, arch, mapping)
    if not rep.valid:
        raise ValueError(f"layer {layer.name!r}: invalid mapping: {rep.reason}")
    out = dict.fromkeys(ROLES, 0.0)
    role = {"W": "kv_cache" if layer.w_role == "kv_cache" else "weights", "I": "activations",
            "O": "kv_cache" if layer.o_role == "kv_cache" else "activations"}
    # the one count (the roofline's too): a fused tile's on-chip operands move nothing off chip
    for op, bits in dram_bits(layer, arch, rep).items():
        out[role[op]] += bits
    return out


def step_metrics(workload: dict[str, Any], energy_pj: float | None, latency_cycles: float | None,
                 clock_mhz: float) -> dict[str, Any]:
    """The serving figures of one transformer step (see the module docstring).

    Args:
        workload: `costmodel.workload.Network.workload` (``phase``, ``batch``, ``seq``).
        energy_pj: the step's energy (pJ), matmuls and vector operations; None if unknown.
        latency_cycles: the step's latency (cycles); None if unknown.
        clock_mhz: the accelerator's clock (MHz).

    Returns:
        ``latency_s``, ``energy_j``, ``tokens`` (per step), ``tokens_per_s``,
        ``energy_per_token_j``, and ``ttft_s`` (prefill) or ``time_per_token_s`` (decode); a
        figure whose inputs are unknown or infinite (no valid mapping) is None.
    """
    phase, batch = workload.get("phase"), int(workload.get("batch") or 1)
    tokens = batch * int(workload.get("seq") or 1) if phase == "prefill" else batch

    lat_s = latency_cycles / (clock_mhz * 1e6) if latency_cycles is not None and math.isfinite(latency_cycles) else None
    e_j = energy_pj * 1e-12 if energy_pj is not None and math.isfinite(energy_pj) else None
    out: dict[str, Any] = {"phase": phase, "latency_s": lat_s, "energy_j": e_j, "tokens": tokens,
                           "tokens_per_s": tokens / lat_s if lat_s else None,
                           "energy_per_token_j": e_j / tokens if e_j is not None else None}
    out["ttft_s" if phase == "prefill" else "time_per_token_s"] = lat_s
    return out


@dataclass(frozen=True)
class ServingMix:
    """A serving mix (issue: "which accelerator for this traffic"): requests of ``prompt`` tokens
    answered with ``output`` tokens, ``batch`` requests served together: one prefill step of
    ``batch`` x ``prompt`` tokens, then ``output`` decode steps at contexts ``prompt + 1`` ..
    ``prompt + output``.

    The decode steps are not all mapped: ``points`` contexts are, evenly spaced from ``prompt + 1``
    to ``prompt + output`` (rounded half up to whole tokens), and the ``output`` steps' sum is the
    trapezoid rule over them (`decode_weights`): exact where a step's cost is linear in its
    context between two points, which it is for the KV cache's reads and the attention matmuls
    (linear in the context) while the weights' part is constant; a mapping that changes with the
    context makes it approximate. A whole request:

    * request latency (cycles) = TTFT (the prefill step) + the decode steps' sum;
    * energy per request (pJ) = (prefill energy + the decode steps' sum) / batch;
    * requests/s = batch / request latency (s); output tokens/s = batch x output / request latency.

    The model is a bundled decoder (``model`` its name, ``config`` None) or one read from a Hugging
    Face config.json (``config`` its `costmodel.transformer.TransformerConfig`, ``model`` its name,
    `costmodel.transformer.hf.model_name`); the mix's identity (`to_dict`, which task ids and the
    campaign's hash include) then holds the model's shapes (`TransformerConfig.shape`), so an edited
    file gives new ids.

    Raises:
        ValueError: a count that is not a positive integer (``workload.<key>``), ``points`` < 2 or
            more than ``output`` distinct contexts allow, or a model that is not a decoder
            (``workload.model``: an encoder or a ViT has no decode step; not a bundled model).
    """

    model: str
    prompt: int
    output: int
    batch: int = 1
    points: int = 3
    fusion: str = "fused"   # `costmodel.transformer.attention.FUSION`: how its steps are built
    config: Any = None        # a model read from a config.json: its `TransformerConfig`; None: bundled
    weight_bits: int | None = None  # the steps' precisions (bits; None: the checkpoint's, else the accelerator's)
    act_bits: int | None = None
    kv_bits: int | None = None

    def __post_init__(self) -> None:
        from costmodel.transformer.attention import FUSION
        if self.fusion not in FUSION:
            raise ValueError(f"workload.fusion = {self.fusion!r}: expected one of {list(FUSION)}")
        for k in ("prompt", "output", "batch", "points"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"workload.{k} = {v!r}: expected a positive integer")
        from costmodel.transformer.step import resolve_bits
        try:
            resolve_bits(self.weight_bits, self.act_bits, self.kv_bits)
        except ValueError as e:  # "weight_bits: must be one of ..."
            key, why = str(e).split(": ", 1)
            raise ValueError(f"workload.{key} = {getattr(self, key)!r}: {why}") from None
        if self.points < 2 and self.output > 1:
            raise ValueError(f"workload.points = {self.points}: at least 2 decode contexts (the first and the last)")
        cfg = self.transformer()
        if cfg.kind != "decoder":  # `costmodel.transformer.step.resolve_step`: decode is a decoder's
            raise ValueError(f"workload.model = {self.model!r}: {self.model} is an {cfg.kind} model: "
                             f"{'an encoder' if cfg.kind == 'encoder' else 'a ViT'} has no decode step, "
                             "and a serving mix decodes; give a decoder")

    def transformer(self):
        """The mix's model, a `costmodel.transformer.TransformerConfig`: ``config``, else the bundled
        model ``model``.

        Raises:
            ValueError: ``config`` is None and ``model`` is no bundled transformer (``workload.model``).
        """
        from costmodel.transformer import TransformerConfig, list_transformers, transformer_config
        if self.config is not None:
            if not isinstance(self.config, TransformerConfig):
                raise ValueError(f"workload.config = {self.config!r}: expected a TransformerConfig")
            return self.config
        if not isinstance(self.model, str) or self.model not in list_transformers():
            raise ValueError(f"workload.model = {self.model!r}: not a bundled transformer; "
                             f"models: {list_transformers()}")
        return transformer_config(self.model)

    @property
    def spec(self):
        """What `costmodel.transformer.build_transformer` builds its steps of: the config read from a
        file, else the bundled model's name."""
        return self.config if self.config is not None else self.model

    def _tags(self) -> str:
        """The tags its steps' names carry after the size (`costmodel.transformer.build_transformer`):
        the precisions given (``/w8/a8``), then ``/unfused`` for unfused attention."""
        bits = "".join(f"/{t}{v}" for t, v in (("w", self.weight_bits), ("a", self.act_bits), ("kv", self.kv_bits))
                       if v is not None)
        return bits + ("/unfused" if self.fusion == "unfused" else "")

    def step_options(self) -> dict[str, Any]:
        """The `costmodel.transformer.build_transformer` keywords of its steps: ``fusion`` and the
        precisions given."""
        return {"fusion": self.fusion, **{k: getattr(self, k) for k in ("weight_bits", "act_bits", "kv_bits")
                                          if getattr(self, k) is not None}}

    @property
    def name(self) -> str:
        """``<model>/mix/b<batch>/p<prompt>/o<output>`` (with its steps' tags): the mix's row in the
        totals."""
        return f"{self.model}/mix/b{self.batch}/p{self.prompt}/o{self.output}" + self._tags()

    def step_names(self) -> list[str]:
        """The names of its steps (`costmodel.transformer.build_transformer`): the prefill,
        then a decode step per context of `contexts`."""
        tag = self._tags()
        return ([f"{self.model}/prefill/b{self.batch}/seq{self.prompt}{tag}"]
                + [f"{self.model}/decode/b{self.batch}/ctx{c}{tag}" for c in self.contexts()])

    def contexts(self) -> list[int]:
        """The decode contexts mapped: ``points`` evenly spaced from prompt + 1 to prompt + output
        (distinct, increasing; one if output is 1)."""
        lo, hi = self.prompt + 1, self.prompt + self.output
        if hi == lo:
            return [lo]
        n = min(self.points, hi - lo + 1)
        return sorted({math.floor(lo + (hi - lo) * i / (n - 1) + 0.5) for i in range(n)})  # half up

    def decode_weights(self) -> list[float]:
        """How many of the ``output`` decode steps each context of `contexts` stands for: the
        trapezoid rule of sum_{c = lo}^{hi} f(c) over the points (weights sum to ``output``)."""
        cs = self.contexts()
        if len(cs) == 1:
            return [float(self.output)]
        w = [0.0] * len(cs)
        for i in range(len(cs) - 1):  # segment [c_i, c_i+1]: its tokens' share, split linearly
            a, b = cs[i], cs[i + 1]
            # tokens c in (a, b] of this segment (the first segment also holds c = a)
            n = b - a + (1 if i == 0 else 0)
            first = a if i == 0 else a + 1
            s_a = sum((b - c) / (b - a) for c in range(first, b + 1))
            w[i] += s_a
            w[i + 1] += n - s_a
        return w

    def to_dict(self) -> dict[str, Any]:
        """The ``[workload]`` table (JSON-able), with ``config``, the model's shapes, for a model read
        from a file."""
        d = {"model": self.model, "prompt": self.prompt, "output": self.output, "batch": self.batch,
             "points": self.points}
        if self.fusion != "fused":  # only where set: fused is the default
            d["fusion"] = self.fusion
        for k in ("weight_bits", "act_bits", "kv_bits"):  # likewise
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.config is not None:  # a model read from a file: its shapes (a bundled one: its name only)
            d["config"] = self.config.shape()
        return d

    def figures(self, prefill: dict[str, Any], decodes: list[dict[str, Any]], clock_mhz: float) -> dict[str, Any]:
        """The request's figures from the step totals (``energy_pj``, ``latency_cycles`` of the
        prefill step and of each decode context of `contexts`, in that order): ``energy_pj`` and
        ``latency_cycles`` of one batch of requests, ``request_latency_s``, ``requests_per_s``,
        ``energy_per_request_j``, ``tokens_per_s`` (output tokens), ``energy_per_token_j`` (per
        output token), ``ttft_s`` and ``time_per_token_s`` (the mean decode step); None where a
        step has no figure."""
        w = self.decode_weights()
        steps = [prefill, *decodes]
        if len(decodes) != len(w) or any(s.get(k) is None or not math.isfinite(s[k])
                                         for s in steps for k in ("energy_pj", "latency_cycles")):
            return dict.fromkeys(("energy_pj", "latency_cycles", "request_latency_s", "requests_per_s",
                                  "energy_per_request_j", "tokens_per_s", "energy_per_token_j", "ttft_s",
                                  "time_per_token_s"))
        e = prefill["energy_pj"] + sum(wi * d["energy_pj"] for wi, d in zip(w, decodes))
        dec_cycles = sum(wi * d["latency_cycles"] for wi, d in zip(w, decodes))
        cyc = prefill["latency_cycles"] + dec_cycles
        s = cyc / (clock_mhz * 1e6)
        return {"energy_pj": e, "latency_cycles": cyc, "request_latency_s": s, "requests_per_s": self.batch / s,
                "energy_per_request_j": e * 1e-12 / self.batch, "tokens_per_s": self.batch * self.output / s,
                "energy_per_token_j": e * 1e-12 / (self.batch * self.output),
                "ttft_s": prefill["latency_cycles"] / (clock_mhz * 1e6),
                "time_per_token_s": dec_cycles / self.output / (clock_mhz * 1e6)}


def energy_breakdown(network, arch, mappings) -> dict[str, Any]:
    """Where the energy of a step goes on ``arch`` (pJ): per (memory level, what it carries) from
    each unique layer's cost report under ``mappings`` (one `costmodel.loopnest.mapping.Mapping`
    per layer of ``network.unique()``, in order) times its repeats, the MACs, and the vector
    operations (`costmodel.vector.vector_cost`: the vector unit's compute, and its tensors'
    traffic at the level they live in, "<level> (vector ops)"). What a level carries is its
    operand's role: W weights or the KV cache (``w_role``), I activations, O activations or the
    new KV cache entries (``o_role``).

    Returns:
        ``{"cells": [{"where", "carries", "energy_pj", "share"}, ...] (largest first),
        "total_pj", "fusion_bound_pj"}``; ``fusion_bound_pj`` is what fusing attention could save
        at most: the vector operations' memory traffic plus the DRAM traffic of the scores
        (``score``'s O) and probabilities (``context``'s I).

    Raises:
        ValueError: a mapping that is invalid on ``arch``; an accelerator without a vector unit
            for a network with vector operations.
    """
    from costmodel.loopnest.reference import evaluate
    from costmodel.vector import vector_cost

    cells: dict[tuple[str, str], float] = {}
    fusion = 0.0

    def add(key: tuple[str, str], pj: float) -> None:
        cells[key] = cells.get(key, 0.0) + pj

    for (layer, rep), mapping in zip(network.unique(), mappings):
        rep_ = evaluate(layer, arch, mapping)
        if not rep_.valid:
            raise ValueError(f"layer {layer.name!r}: invalid mapping: {rep_.reason}")
        role = {"W": "kv_cache" if layer.w_role == "kv_cache" else "weights", "I": "activations",
                "O": "kv_cache" if layer.o_role == "kv_cache" else "activations"}
        for op, levels in rep_.breakdown["operands"].items():
            for lv in levels:
                add((lv["memory"], role[op]), lv["energy_pj"] * rep)
            if (layer.name, op) in (("score", "O"), ("context", "I")) and arch.for_layer(layer).levels(op)[-1].size_bits is None:
                fusion += levels[-1]["energy_pj"] * rep
        add(("MAC", "-"), rep_.breakdown["mac_energy_pj"] * rep)
    for v, rep in zip(network.vector_ops, network.vector_repeats):
        c = vector_cost(v, arch)
        add(("vector unit", "compute"), c.compute_pj * rep)
        add((f"{c.memory} (vector ops)", "activations"), c.memory_pj * rep)
        fusion += c.memory_pj * rep
    total = sum(cells.values())
    return {"total_pj": total, "fusion_bound_pj": fusion,
            "cells": [{"where": w, "carries": r, "energy_pj": e, "share": e / total if total else 0.0}
                      for (w, r), e in sorted(cells.items(), key=lambda kv: -kv[1])]}


def step_launches(network) -> int:
    """Kernel launches of one transformer step: what a fixed cost per launch
    (`costmodel.loopnest.arch.Accelerator.launch_overhead_us`) is counted on.

    One launch per execution of each matmul that reads weights (``repeats``: q_proj once per block,
    a MoE expert's matmuls once per expert touched per block); attention's matmuls one batched
    launch per block each (``score`` and ``context``: all sequences and heads, whatever causal
    rectangles the model splits them into, as a batched GEMM runs them), or one per block for
    fused attention (one kernel for score, softmax and context, as FlashAttention launches); each
    vector operation one launch per block (``min(repeats, layers)``: a softmax over every head is
    one kernel), except those that never launch: an element-wise operation applied as its producer
    drains (``in_flight``) and the online softmax, rescale and normalisation inside fused attention
    (``onchip``). The launches of a framework's own bookkeeping (allocation, the sampler) are not
    counted.

    Returns:
        launches per step (count); 0 for a network that is not a zoo transformer step.
    """
    model = (network.workload or {}).get("model")
    if model is None:
        return 0
    from costmodel.transformer.shard import shard_config, split_of
    from costmodel.transformer import config_of
    blocks = shard_config(config_of(network.workload), split_of(network.workload)).layers  # a stage's
    n, attention = 0, set()
    for layer, rep in network:
        if layer.w_role == "kv_cache":
            attention.add("fused" if layer.onchip else layer.name.split("_")[0])
        else:
            n += rep
    n += blocks * len(attention)
    for op, rep in zip(network.vector_ops, network.vector_repeats):
        if not (op.in_flight or op.onchip):
            n += min(rep, blocks)
    return n


_LAYOUTS: dict[int, tuple] = {}


def _layout(network) -> tuple[list[tuple[str, int, int]], list[tuple[str, ...]]]:
    """What `step_latency` reads of a step that is the same on every accelerator, kept per network
    object (up to 256): per layer (name, index of its shape in ``network.unique()``, repeat), and per
    vector operation the layers it overlaps that are in the step, in the order it names them (sums over
    them run in that order, whatever the process's string hashing)."""
    hit = _LAYOUTS.get(id(network))
    if hit is not None and hit[0] is network:
        return hit[1]
    index = {l.shape_key(): k for k, (l, _) in enumerate(network.unique())}
    layers = [(l.name, index[l.shape_key()], r) for l, r in network]
    present = {l.name for l, _ in network}
    overlaps = [tuple(dict.fromkeys(n for n in op.overlaps if n in present)) for op in network.vector_ops]
    if len(_LAYOUTS) >= 256:
        _LAYOUTS.clear()
    _LAYOUTS[id(network)] = (network, (layers, overlaps))
    return layers, overlaps


def step_latency(network, unique_latency: list[float], vector_rows: list[dict[str, Any]]) -> dict[str, float]:
    """A step's latency (cycles) with the vector unit working while the array works.

    The array runs the matmuls one after another; the vector unit runs the vector operations. An
    operation that ``overlaps`` layers (`costmodel.workload.VectorOp.overlaps`: a fused op beside
    its producer, the online softmax beside the attention tiles; `costmodel.transformer.attention`) runs
    while they run: the array's and the vector unit's work on the same tiles pipeline (one unit on
    tile j while the other is on tile j + 1; the TPU's separate matrix and vector units, Jouppi et
    al., ISCA 2017, Sec. 2; FlashAttention-3 overlaps the softmax with the GEMMs the same way, Shah
    et al., 2024), so the slower of the two sets their time. Operations that share a layer form one
    group. Every other vector operation depends on the whole output of the operation before it and
    runs after it. So

        latency = sum(matmuls) + sum(ungrouped vector ops) + sum over groups max(0, V_g - A_g)

    with V_g a group's vector cycles and A_g its layers' cycles (x repeats). The pipeline's fill
    (one tile of the first unit) is neglected, as is the DRAM port the two units share (a fused
    op's memory traffic is what is left after fusion: its other inputs, `costmodel.vector`).

    Args:
        network: the step (`costmodel.workload.Network`, its layers as built, not merged).
        unique_latency: cycles of one execution of each layer of ``network.unique()``, in order.
        vector_rows: `costmodel.vector.network_vector_costs` rows of ``network`` (same order as
            ``network.vector_ops``), each ``latency_cycles`` for one execution and ``repeat``.

    Returns:
        ``latency_cycles`` (overlapped), ``serial_cycles`` (matmuls + vector ops one after
        another) and ``overlapped_cycles`` (the difference), cycles.
    """
    layers, overlaps = _layout(network)
    array: dict[str, float] = {}
    for name, k, r in layers:
        array[name] = array.get(name, 0.0) + unique_latency[k] * r
    matmuls = sum(array.values())
    alone = 0.0
    groups: list[tuple[dict[str, None], float]] = []   # a group's layer names (in a fixed order) and cycles
    for names0, row in zip(overlaps, vector_rows):
        v = row["latency_cycles"] * row["repeat"]
        if not names0:
            alone += v
            continue
        names = dict.fromkeys(names0)
        merged = [g for g in groups if any(n in names for n in g[0])]
        for g in merged:
            groups = [h for h in groups if h is not g]
            names.update(g[0])
            v += g[1]
        groups.append((names, v))
    hidden_excess = sum(max(0.0, v - sum(array[n] for n in names)) for names, v in groups)
    serial = matmuls + alone + sum(v for _, v in groups)
    latency = matmuls + alone + hidden_excess
    return {"latency_cycles": latency, "serial_cycles": serial, "overlapped_cycles": serial - latency}
