"""Attention in a transformer step, and what fusion keeps on chip (`costmodel.transformer`
builds a step from these).

**The mask** (`ATTENTION`). A decoder's prefill is causal: query i attends keys 0..i. A kernel that
skips the blocks above the diagonal computes the rectangles of `causal_blocks` (diagonal blocks of
at most `CAUSAL_BLOCK` tokens in full, masked inside). Encoders and ViT are dense.

**Fusion** (`FUSION`). ``unfused``: every operation reads its inputs from, and writes its output
to, DRAM, one home per tensor for every operation that touches it (`costmodel.vector` rule b): the
score matmul writes the scores, the softmax reads them and writes the probabilities, the context
matmul reads them, all through DRAM. ``fused``: what a
serving kernel does.

* Attention is one group per (sequence, KV head), FlashAttention's schedule (Dao et al.,
  NeurIPS 2022, Alg. 1; Dao, ICLR 2024, for the query-tile-outer order): for each query tile of
  ``tq`` positions (x the group's query heads as rows), for each K/V tile of ``tk`` keys (causal:
  only the tiles at or below the diagonal, the diagonal one computed in full and masked), the score
  tile S = Q K^T, the online softmax of S on the vector unit, and the context tile O += P V. The
  loop-nest model costs each tile's matmuls (`Layer.onchip`: the operands that never leave the
  chip, so the outermost memory does not serve them for that layer and their tiles must fit the
  on-chip levels, `costmodel.loopnest.arch.Accelerator.for_layer`): the scores and probabilities
  stay on chip (score's O, context's I), K and V come from DRAM once per (query tile, K/V tile)
  pair, so once per query tile; Q is read from DRAM by each query tile's first score tile (its I
  from DRAM, kept on chip for the rest) and the output written by its last context tile (its O to
  DRAM, accumulated on chip before). The online softmax's extra work is vector work per tile:
  ``online_softmax`` on S, the partial output rescaled after every tile but the first
  (``attn_rescale``: rows x head_dim multiplies), and normalised once per query tile
  (``attn_normalize``). Tiles: ``tq = min(query_tile, q_len)`` query positions (a step parameter,
  default `FUSED_TILE` = 128, FlashAttention-2's block for head dims up to 128) and ``tk =
  min(FUSED_TILE, attended)`` keys; the order of the loops inside a tile is searched by the mapper,
  the tile itself is not (a campaign can list query tiles).
* Element-wise operations are applied as the accumulators of the matmul that produces their
  input drain (the TPU's activation pipeline sits at the accumulators' output, Jouppi et al., ISCA
  2017, Sec. 2): RoPE on q_proj / k_proj, the activation on ffn_gate (ffn_up for GELU), the SwiGLU
  multiply on ffn_up (reading the activated gate), the residual adds on o_proj and ffn_down
  (reading the residual), bias adds on the projections: no round trip of that tensor through
  memory (`VectorOp.in_flight`), and the vector unit works while the array does
  (`VectorOp.overlaps`). A norm needs its row's statistics before it can scale the row: it stays a
  second pass (it reads its input and writes the normalised rows), as do the MoE router's softmax
  and the expert combine.

Overlap (both modes, `costmodel.llm.step_latency`): an operation with ``overlaps`` runs on the
vector unit while the array runs the layers it names (the slower of the two sets their time);
every other operation runs after the one before it.
"""

from __future__ import annotations

import math

from costmodel.workload import Layer, VectorOp

__all__ = ["ATTENTION", "FUSION", "CAUSAL_BLOCK", "FUSED_TILE", "QUERY_TILES", "KV_TILES", "causal_blocks", "band_blocks",
           "chunk_blocks",
           "fused_tiles", "fusion_variants",
           "attention_layers", "fused_attention_ops", "fuse_elementwise", "computed_pairs"]

#: Attention masks: a decoder's prefill is ``causal`` by default (query i attends keys 0..i), an
#: encoder's and a ViT's ``dense`` (every query every key).
ATTENTION = ("causal", "dense")
#: How a step's operations meet memory (module docstring); ``fused`` is the default (as LLMs are
#: served: FlashAttention-style kernels in vLLM, SGLang and TensorRT-LLM).
FUSION = ("unfused", "fused")
#: The query / key block of a causal prefill (tokens): blocks wholly above the diagonal are skipped,
#: the diagonal blocks computed in full and masked. Our choice, the block FlashAttention-2 runs for
#: head dims up to 128 (Dao, "FlashAttention-2", ICLR 2024, Sec. 3.3 and its released kernels).
CAUSAL_BLOCK = 128
#: The query and K/V tile of fused attention (positions, keys): the same 128.
FUSED_TILE = 128
#: The query tiles (positions) and K/V tiles (keys) `fusion_variants` offers the choice among
#: (``fusion = "auto"``): FlashAttention-2's released kernels run query blocks of 64 and 128 with K/V
#: blocks of 32 to 128 on a GPU's ~100-228 KiB of shared memory per SM (Dao, ICLR 2024, Sec. 3.3);
#: an accelerator with MiBs of on-chip memory can hold larger ones, up to the 1,024 positions where
#: K and V are re-read 32x less than at 32 (our choice of range, powers of two).
QUERY_TILES = (64, 128, 256, 512, 1024)
KV_TILES = (64, 128, 256, 512)


def causal_blocks(n: int, block: int = CAUSAL_BLOCK) -> list[tuple[int, int, int]]:
    """The (query rows, key columns, count) rectangles a causal kernel computes for ``n`` queries
    attending keys 0..i (the lower triangle with its diagonal), equal shapes merged, largest first.

    The triangle of n <= ``block`` is one diagonal block computed in full (n x n, masked inside);
    a larger one splits at h = floor(n / 2) into the triangles of the first h and the last n - h
    queries and the (n - h) x h rectangle below the first (every pair of it is unmasked). So every
    query-key pair at or below the diagonal is computed exactly once, and above it only inside the
    diagonal blocks: for n = 2^k and block b, n^2 / 2 + n b / 2 pairs, against the exact
    n (n + 1) / 2 (n = 2,048, b = 128: 2,228,224 = 1.062 x 2,098,176; n = 32,768: 1.0039 x).
    """
    out: dict[tuple[int, int], int] = {}

    def tri(m: int, times: int) -> None:
        if m <= block:
            out[(m, m)] = out.get((m, m), 0) + times
            return
        h = m // 2
        out[(m - h, h)] = out.get((m - h, h), 0) + times
        if h == m - h:
            tri(h, 2 * times)
        else:
            tri(h, times)
            tri(m - h, times)

    tri(n, 1)
    return sorted(((r, c, k) for (r, c), k in out.items()), key=lambda t: (-t[0] * t[1], -t[0]))


def band_blocks(n: int, window: int, block: int = CAUSAL_BLOCK) -> list[tuple[int, int, int]]:
    """The (query rows, key columns, count) rectangles a causal kernel with a sliding window
    computes for ``n`` queries, query i attending keys i - window + 1 .. i (Mistral's and Gemma's
    local blocks at prefill): the triangle of the first ``window`` queries as `causal_blocks`, then
    the others in blocks of ``block`` queries, each block of r rows computing the window + r - 1 keys
    its rows attend between them (a band of r x window pairs, the corners masked). ``n <= window``:
    `causal_blocks` (the window does not bind). For n = 2 window, block b: the extra over the exact
    pairs is (b - 1) / window of the band (window 4,096, b 128: 3.1%; window 512: 25%)."""
    if n <= window:
        return causal_blocks(n, block)
    out: dict[tuple[int, int], int] = {(r, c): k for r, c, k in causal_blocks(window, block)}
    full, rest = divmod(n - window, block)
    for rows, times in ((block, full), (rest, 1)):
        if rows and times:
            key = (rows, window + rows - 1)
            out[key] = out.get(key, 0) + times
    return sorted(((r, c, k) for (r, c), k in out.items()), key=lambda t: (-t[0] * t[1], -t[0]))


def chunk_blocks(q_len: int, prefix: int, window: int = 0, block: int = CAUSAL_BLOCK) -> list[tuple[int, int, int]]:
    """The (query rows, key columns, count) rectangles an unfused causal kernel computes for a
    chunk of ``q_len`` queries after ``prefix`` cached keys (chunked prefill: query i attends keys
    0 .. prefix + i; with a sliding ``window``, keys prefix + i - window + 1 .. prefix + i): blocks of
    ``block`` queries, each computing in full the keys its rows attend between them (the corner
    above the diagonal masked), equal shapes merged, largest first. ``prefix`` 0: `causal_blocks`
    (`band_blocks` with a window). Computed pairs, no window: q_len x prefix + sum over blocks of
    r x (q0 + r), against the exact q_len x prefix + q_len (q_len + 1) / 2."""
    if prefix == 0:
        return band_blocks(q_len, window, block) if window else causal_blocks(q_len, block)
    out: dict[tuple[int, int], int] = {}
    for q0 in range(0, q_len, block):
        rows = min(block, q_len - q0)
        hi = prefix + q0 + rows
        lo = max(0, prefix + q0 - window + 1) if window else 0
        out[(rows, hi - lo)] = out.get((rows, hi - lo), 0) + 1
    return sorted(((r, c, k) for (r, c), k in out.items()), key=lambda t: (-t[0] * t[1], -t[0]))


def fused_tiles(q_len: int, attended: int, causal: bool, tile: int = FUSED_TILE,
                key_tile: int | None = None, window: int = 0, prefix: int = 0) -> dict[tuple, int]:
    """The tiles of one fused attention instance: ``{(rows, cols, first, last): count}`` with rows
    the query positions of the tile (before the GQA group), cols its keys, ``first`` / ``last``
    whether it is its query tile's first / last K/V tile. Query tiles of ``min(tile, q_len)``
    positions, K/V tiles of ``min(key_tile, attended)`` keys (``key_tile`` None: ``tile``), the last
    of each partial; causal: the K/V tiles up to the query tile's last position (q_len = attended: a
    prefill), and with a sliding ``window`` from the tile holding the first key its first query
    attends (FlashAttention-2's local attention skips the tiles before). ``prefix``: keys already
    in the cache before the first query (a chunk of a chunked prefill, causal: query i attends keys
    0 .. prefix + i, so attended = prefix + q_len); 0 for a whole prefill or a decode step."""
    tq, tk = min(tile, q_len), min(tile if key_tile is None else key_tile, attended)
    out: dict[tuple, int] = {}
    for qi in range(math.ceil(q_len / tq)):
        q0 = prefix + qi * tq
        rows = min(tq, prefix + q_len - q0)
        hi = q0 + rows if causal else attended
        k0 = max(0, q0 - window + 1) // tk if causal and window else 0
        nk = math.ceil(hi / tk)
        for ki in range(k0, nk):
            key = (rows, min(tk, hi - ki * tk), ki == k0, ki == nk - 1)
            out[key] = out.get(key, 0) + 1
    return out


def fusion_variants(q_len: int, attended: int) -> list[dict]:
    """The ways to run a step's attention that ``fusion = "auto"`` chooses among: ``{"fusion":
    "unfused"}`` first, then ``{"fusion": "fused", "query_tile": q, "kv_tile": k}`` for q in
    `QUERY_TILES`, k in `KV_TILES`, smallest first, tiles that come out the same for this step
    (``min(q, q_len)`` positions, ``min(k, attended)`` keys: a decode step has one query position)
    listed once, under the default `FUSED_TILE` if it is one of them, else the smallest."""
    seen: dict[tuple[int, int], tuple[int, int]] = {}
    for q, k in sorted(((q, k) for q in QUERY_TILES for k in KV_TILES),
                       key=lambda t: (t[0] != FUSED_TILE, t[0], t[1] != FUSED_TILE, t[1])):  # defaults first
        seen.setdefault((min(q, q_len), min(k, attended)), (q, k))
    return [{"fusion": "unfused"}] + [{"fusion": "fused", "query_tile": q, "kv_tile": k} for q, k in sorted(seen.values())]


def computed_pairs(q_len: int, attended: int, causal: bool, fusion: str, query_tile: int = FUSED_TILE,
                   kv_tile: int = FUSED_TILE, window: int = 0, prefix: int = 0) -> int:
    """Query-key pairs one head computes: fused, the tiles of `fused_tiles` (query tiles of
    ``query_tile`` positions, K/V tiles of ``kv_tile`` keys); unfused, the blocks of
    `causal_blocks` (causal; `band_blocks` with a sliding ``window``; `chunk_blocks` after a
    ``prefix``) or q_len x attended (dense)."""
    if fusion == "fused":
        return sum(r * c * n for (r, c, _, _), n in fused_tiles(q_len, attended, causal, query_tile,
                                                                kv_tile, window, prefix).items())
    if causal and prefix:
        return sum(r * c * n for r, c, n in chunk_blocks(q_len, prefix, window))
    if causal:
        return sum(r * c * n for r, c, n in (band_blocks(q_len, window) if window else causal_blocks(q_len)))
    return q_len * attended


def _mm(name: str, C: int, K: int, B: int, **kw) -> Layer:
    return Layer(name, K=K, C=C, B=B, kind="matmul", w_role="kv_cache", **kw)


def attention_layers(group: int, head_dim: int, q_len: int, attended: int, causal: bool, fusion: str,
                     per_head: int, tile: int = FUSED_TILE, key_tile: int | None = None,
                     instances: int = 1, v_dim: int | None = None, window: int = 0,
                     prefix: int = 0) -> tuple[list[Layer], list[int]]:
    """The score and context matmuls of a step's attention and their repeats (``per_head``
    executions of each, ``instances`` instances in each: batch x kv_heads x layers in all; module
    docstring): unfused dense, ``score`` and ``context``; unfused causal, ``score_<r>x<c>`` /
    ``context_<r>x<c>`` per rectangle of `causal_blocks`; fused, the tiles of `fused_tiles`
    (``tile``) with their on-chip operands. ``instances`` > 1: each layer is a batched matmul of
    that many independent instances, the loop dim G (every operand depends on it: K and V are
    per KV head, the group's query heads stay rows of B, sharing them). ``head_dim`` is the width
    of a query / key head (score's C), ``v_dim`` that of a value head (context's K; None: head_dim;
    they differ in MLA, `costmodel.transformer.mla`). ``prefix``: a causal chunk after that many
    cached keys (attended = prefix + q_len; `chunk_blocks`, `fused_tiles`)."""
    vd = head_dim if v_dim is None else v_dim
    if instances > 1:
        from dataclasses import replace
        layers, reps = attention_layers(group, head_dim, q_len, attended, causal, fusion, per_head, tile, key_tile,
                                        v_dim=v_dim, window=window, prefix=prefix)
        return [replace(l, G=instances) for l in layers], reps
    if fusion == "fused":
        layers, reps = [], []
        for (r, c, first, last), n in fused_tiles(q_len, attended, causal, tile, key_tile, window, prefix).items():
            tag = f"_{r}x{c}"
            layers += [_mm(f"score_tile{tag}{'_first' if first else ''}", head_dim, c, group * r,
                           onchip=("O",) if first else ("I", "O")),
                       _mm(f"context_tile{tag}{'_last' if last else ''}", c, vd, group * r,
                           onchip=("I",) if last else ("I", "O"))]
            reps += [per_head * n, per_head * n]
        merged: dict[Layer, int] = {}  # the same tile named twice (first and last of a one-tile row) once
        for l, r in zip(layers, reps):
            merged[l] = merged.get(l, 0) + r
        return list(merged), list(merged.values())
    if causal:
        layers, reps = [], []
        for r, c, n in chunk_blocks(q_len, prefix, window):
            layers += [_mm(f"score_{r}x{c}", head_dim, c, group * r), _mm(f"context_{r}x{c}", c, vd, group * r)]
            reps += [per_head * n, per_head * n]
        return layers, reps
    rows = group * q_len
    return [_mm("score", head_dim, attended, rows), _mm("context", attended, vd, rows)], [per_head, per_head]


def fused_attention_ops(group: int, head_dim: int, q_len: int, attended: int, causal: bool, per_head: int,
                        bits: int | None, tile_layers: tuple[str, ...],
                        tile: int = FUSED_TILE, key_tile: int | None = None,
                        window: int = 0, prefix: int = 0) -> tuple[list[VectorOp], list[int]]:
    # head_dim: the width of the partial output (a value head's: v_head_dim in MLA)
    """The vector work of fused attention per tile shape (module docstring): ``online_softmax`` on
    each score tile, ``attn_rescale`` of the partial output after every K/V tile but a query
    tile's first, ``attn_normalize`` once per query tile; repeats x ``per_head``; each overlaps the
    attention's tile matmuls (``tile_layers``). Order: by tile shape, as `fused_tiles`."""
    ops: list[VectorOp] = []
    reps: list[int] = []
    soft: dict[int, int] = {}
    for (r, c, first, last), n in fused_tiles(q_len, attended, causal, tile, key_tile, window, prefix).items():
        rows = group * r
        ops.append(VectorOp(f"online_softmax_{r}x{c}", "online_softmax", rows * c, rows=rows, bits=bits,
                            overlaps=tile_layers, onchip=True))
        reps.append(per_head * n)
        if not first:
            soft[rows] = soft.get(rows, 0) + n
        if last:
            ops.append(VectorOp(f"attn_normalize_{r}", "mul", rows * head_dim, rows=rows, bits=bits,
                                overlaps=tile_layers, onchip=True))
            reps.append(per_head * n)
    for rows, n in soft.items():
        ops.append(VectorOp(f"attn_rescale_{rows}", "mul", rows * head_dim, rows=rows, bits=bits, overlaps=tile_layers,
                            onchip=True))
        reps.append(per_head * n)
    merged: dict[VectorOp, int] = {}  # equal ops (tiles that differ only in first / last) once
    for o, r in zip(ops, reps):
        merged[o] = merged.get(o, 0) + r
    return list(merged), list(merged.values())


#: Element-wise ops applied as their producer's accumulators drain (module docstring): op name ->
#: the layers whose output they may take in flight (those of the step's model that exist: GQA or
#: MLA projections, a dense FFN or the experts).
_PRODUCERS = {"rope_q": ("q_proj", "q_b_proj"), "rope_k": ("k_proj", "kv_a_proj"),
              "attn_residual": ("o_proj",),
              "ffn_residual": ("ffn_down",), "dense_act": ("ffn_gate",), "dense_gate_mul": ("ffn_up",),
              "shared_act": ("shared_gate",), "shared_gate_mul": ("shared_up",), "qkv_bias_add": ("q_proj", "k_proj", "v_proj")}
#: Producers named whether or not the step has them (the overlaps of the first models' fused steps,
#: so their task ids stay; a name the step lacks overlaps nothing).
_FIXED = {"bias_add": ("q_proj", "k_proj", "v_proj", "o_proj", "ffn_gate", "ffn_up", "ffn_down")}
#: An MoE block's FFN output is the experts' weighted sum (vector ops, no matmul drain): its residual
#: add takes that sum in flight on the vector unit, overlapping no matmul.
_CHAINED = ("ffn_residual",)


def fuse_elementwise(ops: list[VectorOp], gated: bool, layers: set[str] | None = None) -> list[VectorOp]:
    """``ops`` with the element-wise operations of a block fused into their producers (module
    docstring): ``in_flight`` 1 (that input not read, no write of their own) and ``overlaps`` the
    producers among ``layers`` (the step's layer names; None: every candidate); an op none of
    whose producers is in the step stays a pass of its own, but an MoE block's residual add, which
    takes the experts' sum in flight (``overlaps`` nothing). Norms, softmaxes and the MoE ops
    unchanged."""
    from dataclasses import replace
    moe = layers is not None and "expert_up" in layers  # an MoE block's activation: the experts'
    pre, hi = ("expert", ("", "_hi")) if moe else ("ffn", ("",))
    first = "gate" if gated else "up"
    producers = {**_PRODUCERS, "act": tuple(f"{pre}_{first}{h}" for h in hi),
                 "gate_mul": tuple(f"{pre}_up{h}" for h in hi)}
    out = []
    for op in ops:
        names = _FIXED.get(op.name) or tuple(n for n in producers.get(op.name, ()) if layers is None or n in layers)
        if names:
            op = replace(op, in_flight=1, overlaps=names)
        elif op.name in _CHAINED:
            op = replace(op, in_flight=1, overlaps=())
        out.append(op)
    return out
