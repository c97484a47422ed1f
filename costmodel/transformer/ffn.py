"""The FFN half of a step's blocks: a dense FFN, or a mixture of experts with its router, its routed
experts, a shared expert and dense blocks (`ffn_layers`; `costmodel.transformer.build` assembles
the step).

Mixture of experts: routing is assumed uniform and independent across tokens, each token picking a
uniformly random set of top_k of the E experts. An expert is then missed by one token with
probability 1 - k/E, so the expected number of distinct experts touched by T tokens is
n_e = E * (1 - (1 - k/E)^T) (linearity of expectation over the experts: the occupied cells of the
classical occupancy problem, Feller, An Introduction to Probability Theory and Its Applications,
vol. 1). Exact for uniform top-k routing; real routers are skewed and correlated across tokens, so
n_e estimates the expert weights a step reads. n_e is rounded to the nearest integer and clipped to
[min(k, E), min(E, T*k)]; the T*k token-expert pairs are split over the n_e experts as evenly as
possible, q, r = divmod(T*k, n_e): ``expert_*`` layers with B=q for n_e - r experts and
``expert_*_hi`` layers with B=q+1 for r experts (absent when r = 0). So the MACs are exactly those
of top_k experts per token, and the weights read are those of n_e experts
(``workload["experts_touched"]``). DeepSeek's group-limited routing (the top_k experts drawn from
the best topk_group of n_group groups) is taken as uniform too.

Every token also passes the shared expert (``shared_gate`` / ``shared_up`` / ``shared_down``,
B = T; DeepSeekMoE, Dai et al., ACL 2024, Sec. 3.2: n_shared_experts experts of the routed width,
built as one FFN of n_shared x that width as the released code does; Qwen2-MoE's one of
shared_expert_intermediate_size, scaled by sigmoid(``shared_expert_gate``), a hidden -> 1 matmul).
Dense blocks (DeepSeek's first_k_dense_replace, Qwen's mlp_only_layers) run ``ffn_*`` of width
dense_ffn instead.
"""

from __future__ import annotations

import math

from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.params import ffn_weights, mm
from costmodel.workload import Layer

__all__ = ["ffn_layers", "experts_touched"]


def experts_touched(tokens: int, experts: int, top_k: int) -> int:
    """Expected distinct experts that ``tokens`` tokens route to, each picking a uniform random
    top_k-subset of ``experts``: E*(1 - (1 - k/E)^T), rounded half up and clipped to
    [min(k, E), min(E, T*k)] (module docstring). Counts in, a count out."""
    n = math.floor(experts * (1.0 - (1.0 - top_k / experts) ** tokens) + 0.5)
    return max(min(top_k, experts), min(n, experts, tokens * top_k))


def ffn_layers(cfg: TransformerConfig, T: int, ep: int = 1) -> tuple[list[Layer], list[int], int | None]:
    """The FFN matmuls of a step of ``T`` tokens (B set), their repeats (x the blocks of each kind)
    and the experts touched per MoE block (None for a dense model). With expert parallelism ``ep``,
    the tokens of all ``ep`` groups route over all experts and one group's share is 1 / ep of the
    pairs and of the experts touched (`costmodel.system.parallel`)."""
    L = cfg.layers
    if not cfg.experts:
        ffn = [l.with_(B=T) for l in ffn_weights(cfg, "ffn")]
        return ffn, [L] * len(ffn), None
    layers: list[Layer] = []
    reps: list[int] = []
    if cfg.dense_blocks:
        dense = [l.with_(B=T) for l in ffn_weights(cfg, "ffn", cfg.dense_ffn)]
        layers += dense
        reps += [len(cfg.dense_blocks)] * len(dense)
    M = cfg.moe_blocks
    n_e = experts_touched(T * ep, cfg.experts, cfg.top_k)
    if ep > 1:  # this group's experts: 1 / ep of those touched (at least one), T * top_k pairs
        n_e = max(1, math.floor(n_e / ep + 0.5))
    per, extra = divmod(T * cfg.top_k, n_e)
    layers.append(mm("router", cfg.hidden, cfg.experts, T))
    reps.append(M)
    for l in ffn_weights(cfg, "expert"):
        layers.append(l.with_(B=per))
        reps.append((n_e - extra) * M)
        if extra:
            layers.append(l.with_(name=f"{l.name}_hi", B=per + 1))
            reps.append(extra * M)
    if cfg.shared_ffn:
        shared = [l.with_(B=T) for l in ffn_weights(cfg, "shared", cfg.shared_ffn)]
        if cfg.shared_gate:
            shared.append(mm("shared_expert_gate", cfg.hidden, 1, T))
        layers += shared
        reps += [M] * len(shared)
    return layers, reps, n_e
