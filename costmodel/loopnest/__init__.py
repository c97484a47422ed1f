"""The loop-nest cost model: an accelerator with a memory hierarchy (`arch`), a mapping (spatial
unrolling, temporal loops, per-operand memory-level boundaries: `mapping`), the reference
evaluator of one mapping (`reference`), LOMA's bottom-up memory allocation of a loop ordering
(`allocation`), and the fast evaluator of many orderings (`ordering`, with its NumPy, scalar and
Numba backends in the private modules)."""
