"""The cost of any iteration a scheduler can form, from a table of mapped parts.

An iteration (`costmodel.serving.iteration`) costs dense(T) + head(S) + the attention of each of
its sequences + fixed costs. A trace runs 10^4-10^6 iterations, so the parts are mapped once, on
grids, and interpolated here (no mapping in the event loop):

* dense(T) and head(S): piecewise linear in T (S) between grid points (a matmul of T rows streams
  its weights at small T and turns compute-bound past the array's rows: piecewise linear in T);
* a decode's attention at context c: piecewise linear in c (its K/V reads grow with c);
* a chunk's attention at (q, p), q > 1: bilinear in (q, p) of the cost per query-key pair,
  times the chunk's pairs q p + q (q + 1) / 2 (`exact_pairs`): the pairs carry the quadratic term,
  the interpolated density is smooth; a grid point is reproduced exactly.

Past the last grid point the last segment is extended (linear). Every grid point is a mapped
figure; how close the interpolation comes to mapping the same mixed iteration directly is measured
by ``scripts/serving_interpolation.py`` (held-out iterations of a simulated trace).

Fixed costs per iteration: ``launches`` kernel launches x ``launch_s`` (the accelerator's fixed cost
per launch, `costmodel.llm.step_launches` counts them: the dense part's, the head's, and one
attention kernel per block when any sequence attends) plus ``host_s``, the host's time per
iteration (scheduling, input preparation, sampling; `costmodel.serving.scheduler`).

Under expert parallelism (ep groups, attention data parallel) the sequences are taken to spread
evenly over the groups: the attention time of an iteration is its sequences' sum / ep; energies add
over every chip (the parts' energies are one chip's, x tp x ep).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CostTable", "TABLE_VERSION", "default_grids", "fixed_steps", "FIXED_PROMPT", "FIXED_BATCH", "FIXED_CONTEXT"]

#: Bumped when the table's meaning changes (stored tables of another version are rebuilt).
TABLE_VERSION = 1


def default_grids(max_tokens: int, max_seqs: int, max_context: int) -> dict[str, list[int]]:
    """The grid points mapped (tokens T, sequences S, decode contexts c, chunk queries q and
    prefixes p). Tokens: vLLM's CUDA-graph capture sizes 1, 2, 4, 8, 16, ... 512 (a batch up to 512
    tokens is padded up to one of them, so every such batch is a grid point), then every 64 to 1,024,
    every 128 to 2,048 and every 512 past it (a matmul of T rows changes its best mapping in steps
    of the array's rows); sequences on a geometric grid (the LM head streams its weights, nearly constant);
    contexts and prefixes on a geometric grid of ratio about 1.4 from 128, with 1 (decode) and 0
    (chunk); the limits themselves."""
    def upto(values, hi):
        return sorted({v for v in values if v <= hi} | {hi})

    tokens = upto([1, 2, 4] + list(range(8, 513, 8)) + list(range(576, 1025, 64))
                  + list(range(1152, 2049, 128)) + list(range(2560, max_tokens + 1, 512)), max_tokens)
    seqs = upto([1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024], max_seqs)
    geo: list[int] = []
    x = 128.0
    while x < max_context:
        geo.append(int(x))
        x = x * 1.5 if len(geo) % 2 else x * 4 / 3
    ctx = upto([1, 16, 64] + [int(round(v / 16) * 16) for v in geo], max_context)
    q = upto([2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024, 1280, 1536, 2048, 3072, 4096, 6144,
              8192], max(2, min(max_tokens, max_context)))
    p = upto([0] + [int(round(v / 16) * 16) for v in geo], max(0, max_context - 2))
    return {"tokens": tokens, "seqs": seqs, "contexts": ctx, "chunk_q": q, "chunk_p": p}


def _interp(x, xs: np.ndarray, ys: np.ndarray):
    """Piecewise-linear interpolation, the last segments extended past the ends."""
    out = np.interp(x, xs, ys)
    if len(xs) > 1:
        hi = np.asarray(x) > xs[-1]
        if np.any(hi):
            slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
            out = np.where(hi, ys[-1] + slope * (np.asarray(x) - xs[-1]), out)
    return out


def _bracket(x: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower index, weight of the upper point) of each x in xs (extended linearly past the ends)."""
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, max(0, len(xs) - 2))
    if len(xs) == 1:
        return i, np.zeros_like(x, dtype=np.float64)
    w = (x - xs[i]) / (xs[i + 1] - xs[i])
    return i, w


@dataclass
class CostTable:
    """Mapped iteration parts on grids (module docstring); seconds and joules.

    Attributes:
        tokens, dense_s, dense_j, dense_launches: dense(T) at each T of ``tokens`` (one chip's time,
            every chip's energy), kernel launches of the part.
        seqs, head_s, head_j, head_launches: head(S).
        contexts, decode_s, decode_j: one decoding sequence's attention at context c.
        chunk_q, chunk_p, chunk_s, chunk_j: one chunk's attention, arrays (len(chunk_q), len(chunk_p)).
        attention_launches: kernel launches of the attention when any sequence attends.
        launch_s: fixed cost per kernel launch (s).
        host_s: the host's time per iteration (s).
        ep: expert-parallel groups (the attention time is divided by it).
        meta: what the table was made from (model, accelerator, mapper, system, precisions, clock,
            the memory figures of `costmodel.serving.scheduler.kv_blocks`); stored with it.
    """

    tokens: np.ndarray
    dense_s: np.ndarray
    dense_j: np.ndarray
    dense_launches: np.ndarray
    seqs: np.ndarray
    head_s: np.ndarray
    head_j: np.ndarray
    head_launches: int
    contexts: np.ndarray
    decode_s: np.ndarray
    decode_j: np.ndarray
    chunk_q: np.ndarray
    chunk_p: np.ndarray
    chunk_s: np.ndarray
    chunk_j: np.ndarray
    attention_launches: int = 0
    launch_s: float = 0.0
    host_s: float = 0.0
    ep: int = 1
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k in ("tokens", "seqs", "contexts", "chunk_q", "chunk_p"):
            v = np.asarray(getattr(self, k), dtype=np.float64)
            if v.ndim != 1 or len(v) == 0 or np.any(np.diff(v) <= 0):
                raise ValueError(f"cost table: {k} must be increasing grid points, got {v.tolist()}")
            setattr(self, k, v)
        for k in ("dense_s", "dense_j", "dense_launches", "head_s", "head_j", "decode_s", "decode_j", "chunk_s",
                  "chunk_j"):
            setattr(self, k, np.asarray(getattr(self, k), dtype=np.float64))
        self._pairs = np.array([[q * p + q * (q + 1) / 2 for p in self.chunk_p] for q in self.chunk_q])
        self.density_s = self.chunk_s / self._pairs
        self.density_j = self.chunk_j / self._pairs

    # -- parts --------------------------------------------------------------------------------
    def dense(self, T: float) -> tuple[float, float, float]:
        """(s, J, launches) of dense(T)."""
        return (float(_interp(T, self.tokens, self.dense_s)), float(_interp(T, self.tokens, self.dense_j)),
                float(np.rint(_interp(T, self.tokens, self.dense_launches))))

    def head(self, S: float) -> tuple[float, float]:
        """(s, J) of head(S)."""
        return float(_interp(S, self.seqs, self.head_s)), float(_interp(S, self.seqs, self.head_j))

    def decode_attention(self, context: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(s, J) of each decoding sequence's attention at ``context`` (its p + 1)."""
        return _interp(context, self.contexts, self.decode_s), _interp(context, self.contexts, self.decode_j)

    def chunk_attention(self, q: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(s, J) of each chunk's attention (q > 1 queries after p cached keys): the bilinear
        density times the chunk's pairs."""
        q = np.asarray(q, dtype=np.float64)
        p = np.asarray(p, dtype=np.float64)
        i, wi = _bracket(q, self.chunk_q)
        j, wj = _bracket(p, self.chunk_p)
        i1 = np.minimum(i + 1, len(self.chunk_q) - 1)
        j1 = np.minimum(j + 1, len(self.chunk_p) - 1)
        pairs = q * p + q * (q + 1) / 2
        out = []
        for d in (self.density_s, self.density_j):
            v = ((1 - wi) * (1 - wj) * d[i, j] + wi * (1 - wj) * d[i1, j] + (1 - wi) * wj * d[i, j1]
                 + wi * wj * d[i1, j1])
            out.append(np.maximum(v, 0.0) * pairs)
        return out[0], out[1]

    def attention(self, q: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(s, J) of each sequence's attention: a decode where q = 1 (context p + 1), a chunk
        otherwise."""
        q = np.asarray(q)
        p = np.asarray(p)
        s, j = self.decode_attention(p + 1)
        many = q > 1
        if np.any(many):
            cs, cj = self.chunk_attention(q[many], p[many])
            s = s.copy()
            j = j.copy()
            s[many] = cs
            j[many] = cj
        return s, j

    def iteration(self, q: np.ndarray, p: np.ndarray) -> dict[str, Any]:
        """An iteration's cost: ``seconds`` (its duration: parts + launches + host), ``energy_j``,
        ``shared_j`` (dense and head: shared by its tokens), ``attention_j`` (per sequence, array),
        ``launches``."""
        q = np.asarray(q)
        T = float(q.sum())
        S = float(len(q))
        ds, dj, dl = self.dense(T)
        hs, hj = self.head(S)
        a_s, a_j = self.attention(q, p)
        launches = dl + self.head_launches + self.attention_launches
        sec = ds + hs + float(a_s.sum()) / self.ep + launches * self.launch_s + self.host_s
        return {"seconds": sec, "energy_j": dj + hj + float(a_j.sum()), "shared_j": dj + hj, "attention_j": a_j,
                "launches": launches}

    # -- storage ------------------------------------------------------------------------------
    _ARRAYS = ("tokens", "dense_s", "dense_j", "dense_launches", "seqs", "head_s", "head_j", "contexts",
               "decode_s", "decode_j", "chunk_q", "chunk_p", "chunk_s", "chunk_j")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (`from_dict` reads it back)."""
        d: dict[str, Any] = {"version": TABLE_VERSION}
        for k in self._ARRAYS:
            d[k] = np.asarray(getattr(self, k)).tolist()
        for k in ("head_launches", "attention_launches", "launch_s", "host_s", "ep", "meta"):
            d[k] = getattr(self, k)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CostTable":
        """From `to_dict`'s form.

        Raises:
            ValueError: another table version, or missing arrays.
        """
        if d.get("version") != TABLE_VERSION:
            raise ValueError(f"cost table version {d.get('version')!r}: expected {TABLE_VERSION} (rebuild it)")
        missing = [k for k in cls._ARRAYS if k not in d]
        if missing:
            raise ValueError(f"cost table: missing {missing}")
        kw = {k: np.asarray(d[k], dtype=np.float64) for k in cls._ARRAYS}
        return cls(**kw, head_launches=int(d.get("head_launches", 0)),
                   attention_launches=int(d.get("attention_launches", 0)), launch_s=float(d.get("launch_s", 0.0)),
                   host_s=float(d.get("host_s", 0.0)), ep=int(d.get("ep", 1)), meta=dict(d.get("meta") or {}))

    def dumps(self) -> str:
        return json.dumps(self.to_dict())

    def with_host(self, host_s: float) -> "CostTable":
        """The same table with another host time per iteration (s)."""
        if not math.isfinite(host_s) or host_s < 0:
            raise ValueError(f"host_s = {host_s!r}: expected a number of seconds >= 0")
        d = self.to_dict()
        d["host_s"] = host_s
        return CostTable.from_dict(d)


#: The fixed-batch steps a serving design is also priced at (`fixed_steps`): those of the LLM
#: architecture search (campaigns/llm_llama3_8b.toml: a 2,048-token prefill, decode at batch 16
#: with 2,048 tokens of context), so a request answer can be set beside a step answer.
FIXED_PROMPT, FIXED_BATCH, FIXED_CONTEXT = 2048, 16, 2048


def fixed_steps(table: "CostTable", max_tokens: int, prompt: int = FIXED_PROMPT, batch: int = FIXED_BATCH,
                context: int = FIXED_CONTEXT) -> dict[str, float]:
    """The fixed-batch step figures of a cost table: ``prefill_s`` (s: one ``prompt``-token prompt
    alone, in chunks of ``max_tokens`` each after its prefix, as the scheduler runs it: the TTFT of
    a request alone), ``decode_s`` (s: one decode iteration of ``batch`` sequences at ``context``
    tokens each, its own token included) and ``decode_tokens_per_s`` (= batch / decode_s). Priced by
    `CostTable.iteration` (launches at the table's cost each, no graph replay, no host time beyond
    the table's).

    Raises:
        ValueError: a count < 1.
    """
    if min(prompt, batch, context, max_tokens) < 1:
        raise ValueError(f"fixed steps need counts >= 1, got prompt {prompt}, batch {batch}, context {context}, "
                         f"max_tokens {max_tokens}")
    pre, done = 0.0, 0
    while done < prompt:
        q = min(max_tokens, prompt - done)
        pre += table.iteration(np.array([q]), np.array([done]))["seconds"]
        done += q
    dec = table.iteration(np.ones(batch, dtype=np.int64), np.full(batch, context - 1, dtype=np.int64))["seconds"]
    return {"prefill_s": pre, "decode_s": dec, "decode_tokens_per_s": batch / dec}
