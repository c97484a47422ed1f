"""Multi-NPU mappers (Flexer, CGO 2023): a layer tiled into tCONVs, scheduled on n cores sharing a
global buffer and one DRAM channel (`costmodel.npu`).

* `graph`: the data-flow graph of a tiling and the timing engine (cores, DRAM channel, bounds).
* `memory`: the global buffer's memory map (in-place replacement, best fit, Algorithm 2 spilling).
* `tiled`: their problem (`NPUProblem`: a layer on an `NPUArch`) and the search both mappers share
  (tiling chunks as units, branch and bound).
* `flexer` (out-of-order list scheduling) and `static` (the best static loop order).
"""

from mappers.npu.flexer import FLEXER, FlexerMapper
from mappers.npu.static import STATIC, StaticNPUMapper
from mappers.npu.tiled import NPUProblem

__all__ = ["FLEXER", "FlexerMapper", "STATIC", "StaticNPUMapper", "NPUProblem"]
