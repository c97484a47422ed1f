"""Full-mapspace mappers: tiling, loop order and spatial unrolling searched together on a
loop-nest accelerator (`costmodel.loopnest`).

* `primitive_sa`: the CPEN 513 primitive-list annealer (valid initial state, block moves, repair).
* `baselines`: CoSA's baselines, ``random5`` (Random 5x) and ``hybrid`` (Timeloop-Hybrid-like).
* `cosa/`: CoSA's prime-factor allocation MIP on HiGHS (`cosa.mapper`, `cosa.model`), its
  refill-stall term (`cosa.stall`), an accelerator's ``[spatial_hint]`` as MIP constraints
  (`cosa.hint`) and a brute-force check of the MIP's objective (`cosa.check`).

Every mapper here obeys the accelerator's spatial hint when it has one (param ``hint``, default True).
"""

from mappers.fullspace.baselines import HYBRID, RANDOM5, HybridMapper, Random5Mapper
from mappers.fullspace.cosa import COSA, CosaMapper
from mappers.fullspace.primitive_sa import PRIMITIVE_SA, PrimitiveSAMapper

__all__ = ["PRIMITIVE_SA", "PrimitiveSAMapper", "RANDOM5", "Random5Mapper", "HYBRID", "HybridMapper",
           "COSA", "CosaMapper"]
