"""The loop-nest cost model: an accelerator with a memory hierarchy (`arch`), a mapping (spatial
unrolling, temporal loops, per-operand memory-level boundaries: `mapping`), the reference
evaluator of one mapping (`reference`, the one statement of the physics), LOMA's bottom-up memory
allocation of a loop ordering (`allocation`), and the fast evaluator of many orderings (`ordering`:
one kernel, `kernel`, on one table, `tables`)."""
