"""A transformer step served by a system of chips: one chip's share (`costmodel.system.parallel`),
mapped like any step, plus the collectives and the pipeline that join the shares.

A `System` is ``tp`` x ``pp`` x ``ep`` chips holding one copy of the model, ``replicas`` copies
(data parallel: independent batches), an `Interconnect` and ``micro_batches`` m (the batch cut into m
equal micro-batches that follow each other through the pipeline stages). Per micro-batch of
``T_m`` = tokens / (ep x m) tokens per expert-parallel group, ``H`` = T_m x hidden x the
activations' bytes:

=========================  ===================  =======================================  ===========
collective                 among                per micro-batch                          source
=========================  ===================  =======================================  ===========
all-reduce of the hidden   tp chips             2 per block (after attention's O and     Megatron-LM
state, H bytes                                  the FFN's down projection)               Sec. 3
all-reduce of the          tp chips             1 (the vocabulary-parallel embedding's   Megatron-LM
embedding, H bytes                              partial rows)
all-gather of the logits   tp chips             1 (the LM head's vocab / tp columns of
(rows x vocab x bytes)                          each sequence's last token, for sampling)
all-to-all dispatch and    ep groups            2 per MoE block (T_m x top_k x hidden    GShard,
combine                                         x bytes: each routed token to its        DeepSpeed-MoE
                                                expert's group and back)
send/receive, H bytes      stage to next stage  pp - 1                                   GPipe
=========================  ===================  =======================================  ===========

None of them overlaps compute: each all-reduce's result is the next operation's input (Megatron-LM
and vLLM run them between the row-parallel matmul and the residual add), and so is each all-to-all
and each stage's activations. Costs: `costmodel.system.collectives`.

Time, with t_s the share's latency for one micro-batch (its stage's blocks, final norm and LM head),
t_h the LM head's and final norm's part of it, t_c the collectives of one stage's blocks, and

    t_b = t_s - t_h + t_c                      one stage's blocks
    R   = pp x t_b + t_h + t_head_c + t_emb + (pp - 1) x t_hop     one micro-batch through every stage
    t_last = t_b + t_h + t_head_c              the last (slowest) stage's work per micro-batch

* prefill: TTFT = R + (m - 1) x t_last (GPipe's schedule: the last micro-batch enters after m - 1
  stage times; its bubble (pp - 1) / (m + pp - 1) of each stage's time);
* decode: time per output token = max(R, m x t_last): a sequence's next token needs its micro-batch's
  round trip, and the last stage serves the m micro-batches one after another;
* tokens/s of the system = replicas x tokens of the step / its time; per chip = / chips;
* energy of the step = tp x ep x m x (pp x (E_s - E_h) + E_h) + the links' energy (E_s, E_h: the
  share's energy and its LM head's part), per token = / tokens.

Errors: ValueError naming the key (``system.tp = 0: ...``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from .collectives import collective_cost
from .interconnect import INTERCONNECTS, Interconnect
from .parallel import Split

__all__ = ["System", "SYSTEM_KEYS", "system_step", "iteration_collectives"]

#: The keys of a ``[system]`` table or a system TOML.
SYSTEM_KEYS = ("name", "chips", "tp", "pp", "ep", "replicas", "micro_batches", "interconnect", "launch_overhead_us")


@dataclass(frozen=True)
class System:
    """Chips serving a model (module docstring).

    Attributes:
        tp, pp, ep: tensor, pipeline and expert parallelism of one copy of the model.
        replicas: copies of the model (data parallel).
        micro_batches: micro-batches m of a batch through the pipeline (divides the batch / ep).
        interconnect: the chips' links.
        name: a label.
        launch_overhead_us: the fixed cost per kernel launch the serving software pays on each chip
            (us), over the accelerator's own ``launch_overhead_us``; None: the accelerator's. 0 models
            a decode step captured once and replayed (CUDA graphs, vLLM's default for decode).

    Raises:
        ValueError: ``system.<key> = <value>: expected ...``.
    """

    tp: int = 1
    pp: int = 1
    ep: int = 1
    replicas: int = 1
    micro_batches: int = 1
    interconnect: Interconnect = field(default_factory=lambda: INTERCONNECTS["nvlink3"])
    name: str = ""
    launch_overhead_us: float | None = None

    def __post_init__(self) -> None:
        for k in ("tp", "pp", "ep", "replicas", "micro_batches"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"system.{k} = {v!r}: expected a positive integer")
        v = self.launch_overhead_us
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0):
            raise ValueError(f"system.launch_overhead_us = {v!r}: expected a number >= 0 (us) or absent")

    @property
    def split(self) -> Split:
        """The split of one copy of the model."""
        return Split(self.tp, self.pp, self.ep)

    @property
    def chips(self) -> int:
        """All chips: tp x pp x ep x replicas."""
        return self.tp * self.pp * self.ep * self.replicas

    def label(self) -> str:
        """``8 chips: tp 8 (nvlink3)``."""
        parts = [f"{k} {getattr(self, k)}" for k in ("tp", "pp", "ep", "replicas", "micro_batches")
                 if getattr(self, k) > 1]
        return f"{self.chips} chip{'s' if self.chips > 1 else ''}: {', '.join(parts) or 'one chip'} ({self.interconnect.name})"

    def to_dict(self) -> dict[str, Any]:
        """The ``[system]`` table (the interconnect by name where bundled and unchanged)."""
        net = self.interconnect
        d: dict[str, Any] = {"tp": self.tp, "pp": self.pp, "ep": self.ep, "replicas": self.replicas,
                             "micro_batches": self.micro_batches,
                             "interconnect": net.name if INTERCONNECTS.get(net.name) == net else
                             {k: v for k, v in vars(net).items() if v is not None and v != ""}}
        if self.name:
            d["name"] = self.name
        if self.launch_overhead_us is not None:
            d["launch_overhead_us"] = self.launch_overhead_us
        return d

    @classmethod
    def from_dict(cls, d: Any, src: str = "system") -> "System":
        """From a ``[system]`` table: ``tp``, ``pp``, ``ep``, ``replicas``, ``micro_batches`` (each
        default 1), ``interconnect`` (a bundled name or a table, `Interconnect.from_dict`; default
        nvlink3), ``chips`` (optional: must equal tp x pp x ep x replicas; given alone, tp = chips),
        ``name``.

        Raises:
            ValueError: ``{src}: system.<key> = ...`` naming the key.
        """
        if not isinstance(d, dict):
            raise ValueError(f"{src}: system = {d!r}: expected a table with keys {list(SYSTEM_KEYS)}")
        for k in d:
            if k not in SYSTEM_KEYS:
                raise ValueError(f"{src}: system.{k} = {d[k]!r}: no such key; known keys: {list(SYSTEM_KEYS)}")
        kw = {k: d[k] for k in ("tp", "pp", "ep", "replicas", "micro_batches") if k in d}
        chips = d.get("chips")
        if chips is not None and "tp" not in kw and isinstance(chips, int) and not isinstance(chips, bool):
            rest = kw.get("pp", 1) * kw.get("ep", 1) * kw.get("replicas", 1)
            if isinstance(rest, int) and rest > 0 and chips % rest == 0:
                kw["tp"] = chips // rest
        try:
            net = Interconnect.from_dict(d.get("interconnect", "nvlink3"), src)
            out = cls(**kw, interconnect=net, name=str(d.get("name", "")),
                      launch_overhead_us=d.get("launch_overhead_us"))
        except (TypeError, ValueError) as e:
            msg = str(e)
            raise ValueError(msg if msg.startswith(src) else f"{src}: {msg}") from None
        if chips is not None and chips != out.chips:
            raise ValueError(f"{src}: system.chips = {chips!r}: expected tp x pp x ep x replicas = {out.chips}")
        return out


def _collectives(cfg, workload: dict[str, Any], system: System, act_bytes: float) -> list[dict[str, Any]]:
    """The collectives of one micro-batch (module docstring's table), each: ``name``, ``collective``,
    ``chips``, ``bytes`` (per chip), ``count`` (per micro-batch), ``where`` (``stage``: inside every
    stage's blocks, per stage count / pp; ``head``, ``embedding``, ``hop``), ``time_s`` (one),
    ``energy_pj`` (one, None when the links state no pJ/bit)."""
    sp, net, m = system.split, system.interconnect, system.micro_batches
    batch = int(workload["batch"]) // sp.ep // m          # sequences per micro-batch and group
    tokens = int(workload["tokens"]) // sp.ep // m
    h_bytes = tokens * cfg.hidden * act_bytes
    rows = []

    def add(name, coll, chips, nbytes, count, where, groups):
        c = collective_cost(coll, nbytes, chips, net)  # groups: how many run side by side (energy only)
        rows.append({"name": name, "collective": coll, "chips": chips, "bytes": nbytes, "count": count,
                     "where": where, "time_s": c.time_s,
                     "energy_pj": None if c.energy_pj is None else c.energy_pj * groups,
                     "warnings": list(getattr(c, "warnings", ()))})

    if sp.tp > 1:
        add("all-reduce of the hidden state (after attention, after the FFN)", "all_reduce", sp.tp, h_bytes,
            2 * cfg.layers, "stage", sp.ep)
        if cfg.vocab:
            add("all-reduce of the embedding rows", "all_reduce", sp.tp, h_bytes, 1, "embedding", sp.ep)
        if cfg.kind == "decoder":
            add("all-gather of the logits", "all_gather", sp.tp, batch * cfg.vocab * act_bytes, 1, "head", sp.ep)
    if sp.ep > 1:
        add("all-to-all dispatch and combine of routed tokens", "all_to_all", sp.ep,
            tokens * cfg.top_k * cfg.hidden * act_bytes, 2 * cfg.moe_blocks, "stage", sp.tp)
    if sp.pp > 1:
        add("send/receive of the activations between stages", "send_recv", 2, h_bytes, sp.pp - 1, "hop", sp.tp * sp.ep)
    return rows


def system_step(cfg, workload: dict[str, Any], system: System, share: dict[str, float],
                act_bits: int) -> dict[str, Any]:
    """The figures of a step on ``system`` (module docstring) from one chip's share.

    Args:
        cfg: the whole model's `costmodel.transformer.TransformerConfig`.
        workload: the share's ``Network.workload`` (the system's ``batch`` and ``tokens``).
        system: the `System` (its split equal to the share's).
        share: the share's figures for one micro-batch: ``latency_s``, ``energy_j`` (the whole
            share), ``head_latency_s``, ``head_energy_j`` (its LM head and final norm).
        act_bits: the activations' precision (bits): the collectives' element size.

    Returns:
        ``latency_s`` (the step: TTFT or time per output token), ``ttft_s`` or ``time_per_token_s``,
        ``round_trip_s`` (R), ``last_stage_s``, ``compute_s`` and ``collectives_s`` (R's parts:
        the chips' work on the path and the collectives on it), ``bubble`` (share of the step the
        last stage idles), ``tokens``, ``tokens_per_s`` (the system), ``tokens_per_s_per_chip``,
        ``energy_j`` (one copy's step, links included), ``link_energy_j`` (None when not counted),
        ``energy_per_token_j``, ``collectives`` (`_collectives` rows with ``per_step`` counts and
        ``total_s`` on the path), ``chips``, ``system`` (`System.to_dict`).
    """
    sp, m = system.split, system.micro_batches
    rows = _collectives(cfg, workload, system, act_bits / 8)
    on_stage = sum(r["time_s"] * r["count"] for r in rows if r["where"] == "stage") / sp.pp
    head_c = sum(r["time_s"] * r["count"] for r in rows if r["where"] == "head")
    emb = sum(r["time_s"] * r["count"] for r in rows if r["where"] == "embedding")
    hop = sum(r["time_s"] for r in rows if r["where"] == "hop")
    t_s, t_h = share["latency_s"], share["head_latency_s"]
    t_b = t_s - t_h + on_stage
    r_trip = sp.pp * t_b + t_h + head_c + emb + (sp.pp - 1) * hop
    last = t_b + t_h + head_c
    phase = workload["phase"]
    latency = r_trip + (m - 1) * last if phase == "prefill" else max(r_trip, m * last)
    tokens = int(workload["batch"]) * int(workload.get("seq") or 1) if phase == "prefill" else int(workload["batch"])
    compute = sp.pp * (t_s - t_h) + t_h
    links = [r["energy_pj"] for r in rows]
    link_pj = None if any(e is None for e in links) else sum(e * r["count"] for e, r in zip(links, rows)) * m
    energy = sp.tp * sp.ep * m * (sp.pp * (share["energy_j"] - share["head_energy_j"]) + share["head_energy_j"])
    energy += (link_pj or 0.0) * 1e-12
    for r in rows:
        r["per_step"] = r["count"] * m
        r["total_s"] = r["time_s"] * r["count"]  # on one micro-batch's path
    out = {"latency_s": latency, "round_trip_s": r_trip, "last_stage_s": last, "compute_s": compute,
           "collectives_s": r_trip - compute, "bubble": (1 - m * last / latency) if sp.pp > 1 and latency else 0.0,
           "tokens": tokens, "tokens_per_s": system.replicas * tokens / latency if latency else math.inf,
           "energy_j": energy, "link_energy_j": None if link_pj is None else link_pj * 1e-12,
           "energy_per_token_j": energy / tokens, "collectives": rows, "chips": system.chips,
           "system": system.to_dict(),
           "warnings": list(dict.fromkeys(w for r in rows for w in r.get("warnings", ())))}
    out["tokens_per_s_per_chip"] = out["tokens_per_s"] / system.chips
    out["ttft_s" if phase == "prefill" else "time_per_token_s"] = latency
    return out


def iteration_collectives(cfg, system: System, tokens: int, sequences: int, act_bits: int) -> dict[str, float]:
    """The collectives of one serving iteration of ``tokens`` tokens over ``sequences`` sequences on
    ``system`` (one micro-batch; the module docstring's table with batch = sequences): ``dense_s``
    (those on every block and the embedding's: per token), ``head_s`` (the logits' all-gather: per
    sequence) and their link energies ``dense_j`` / ``head_j`` (0 where the links state no pJ/bit).

    Under pipeline parallelism the iteration is one micro-batch through every stage: the blocks'
    collectives of every stage and the pp - 1 hops of its activations between stages (send /
    receive of tokens x hidden x bytes) count in ``dense_s``, as `system_step`'s round trip R has them.
    """
    work = {"batch": -(-sequences // system.ep) * system.ep, "tokens": -(-tokens // system.ep) * system.ep,
            "phase": "decode"}   # the iteration's sequences and tokens spread over the ep groups
    out = {"dense_s": 0.0, "head_s": 0.0, "dense_j": 0.0, "head_j": 0.0}
    for r in _collectives(cfg, work, dataclasses.replace(system, micro_batches=1), act_bits / 8):
        part = "head" if r["where"] == "head" else "dense"
        on_path = r["time_s"] * r["count"]
        out[f"{part}_s"] += on_path
        out[f"{part}_j"] += (r["energy_pj"] or 0.0) * r["count"] * 1e-12
    return out
