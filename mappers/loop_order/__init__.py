"""Loop-ordering mappers: the spatial unrolling is fixed, the search is over orderings of the
layer's temporal loop prime factors (LPFs), each allocated bottom-up to the memory levels (LOMA)
and costed by `costmodel.loopnest.ordering.OrderingEvaluator`.

* `lpf`: multiset permutations of LPFs (count, rank/unrank, shards, batched enumeration, merging).
* `common`: the cached evaluator of a problem and the result of a best ordering.
* `moves`: swaps, block moves and reversals, their proposal streams, the neighbourhood and a descent.
* `loma` (LOMA, sharded exhaustive), `salsa` (SALSA's simulated annealing), `random` (Timeloop-like).
"""

from mappers.loop_order.loma import LOMA, LomaMapper
from mappers.loop_order.random import RANDOM, RandomMapper
from mappers.loop_order.salsa import SALSA, SalsaMapper

__all__ = ["LOMA", "LomaMapper", "SALSA", "SalsaMapper", "RANDOM", "RandomMapper"]
