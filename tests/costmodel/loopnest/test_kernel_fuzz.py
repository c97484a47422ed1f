"""The fast kernel (`OrderingEvaluator`, every backend) equals the reference on drawn problems.

Each example of `loopnest_strategies.cases` is a whole problem: a layer (dense, 1x1, grouped,
depthwise, FC, batched, or unrolled entirely; strides, dilations, padding), an accelerator (1-3 array dims, 2-6 memory
levels per operand, shared and unshared memories, ``private_to`` scopes, words, bandwidths,
ports, capacities, an accumulator or none, precisions or none), its spatial unrolling, LPFs
(prime or merged), ``even`` and 1-6 loop orderings. For every ordering and backend,
`loopnest_strategies.check_case` compares validity (an ordering whose LOMA allocation raises
MappingError is invalid: inf costs), energy, latency, EDP (relative 1e-12), the allocation's
boundaries (exactly) and every access count and memory stall (``ev.access_counts``) with
``reference.evaluate(layer, arch, allocate(layer, arch, spatial, ev.loops(o), even))``.

The examples are derandomized (the same for one Hypothesis version) and numerous enough to take
about 30 s on one core; ``scripts/fuzz_costmodel.py`` runs the same check with random seeds for
as long as wanted. The test also asserts that the examples were not vacuous: valid and invalid
orderings, double- and single-buffered memories, stalls, padding, accumulators and every layer
kind occurred.
"""

import json

from hypothesis import HealthCheck, event, given, settings

from loopnest_strategies import available_backends, case_to_dict, cases, check_case, features

#: Examples of the derandomized run: about 30 s on one core of the development machine
#: (~14 ms per case: drawing it, the reference of each ordering, both backends).
MAX_EXAMPLES = 2000

#: The backends this environment can run (without numba, or with DSE_SWEEP_NO_NUMBA=1, only the
#: un-jitted one).
AVAILABLE = available_backends()

#: Tags (`loopnest_strategies.features`) that a run of MAX_EXAMPLES cases must have produced.
MUST_COVER = ("valid", "invalid (allocation)", "look-ahead allocated an ordering", "double-buffered", "single-buffered", "stalls",
              "tiles fill a memory exactly", "tiles fill half a memory exactly",
              "padded unrolling", "zero padding", "merged factors", "accumulator", "no accumulator", "even=True", "even=False",
              "memory shared by 3", "memory shared by 2", "memory unshared", "per-operand ports", "multicast of I",
              "W levels=6",
              "O levels=2",
              "array_dims=3", "kind=conv", "kind=1x1", "kind=grouped", "kind=depthwise", "kind=fc",
              "kind=batched", "kind=unrolled", "precisions given: 0", "precisions given: 4")


def _failure(case, errors) -> str:
    """The disagreements and a JSON reproducer of the case (`case_to_dict`, all its orderings: the
    kernel reuses the previous ordering's prefix; replay it with ``python
    scripts/fuzz_costmodel.py --replay FILE``)."""
    lines = [f"{b}: ordering {i}: {msg}" for b, i, msg in errors]
    return "\n".join(lines + ["reproducer: " + json.dumps(case_to_dict(case))])


def test_kernel_equals_reference_on_drawn_problems():
    seen: set[str] = set()
    counted = {"orderings": 0, "valid": 0}

    @settings(derandomize=True, deadline=None, max_examples=MAX_EXAMPLES, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=cases())
    def run(case):
        reports, errors = None, []
        for backend in AVAILABLE:
            errs, reports = check_case(case, backend, reports)
            errors += [(backend, i, msg) for i, msg in errs]
        assert not errors, _failure(case, errors)
        tags = features(case, reports)
        for t in sorted(tags):
            event(t)
        seen.update(tags)
        counted["orderings"] += len(reports)
        counted["valid"] += sum(r is not None and r.valid for r in reports)

    run()
    assert set(MUST_COVER) <= seen, f"the drawn cases never produced {sorted(set(MUST_COVER) - seen)}"
    assert counted["valid"] >= counted["orderings"] // 4, counted
