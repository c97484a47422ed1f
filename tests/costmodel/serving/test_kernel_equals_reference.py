"""The compiled event loop equals its plain-Python statement, iteration by iteration, on random
loads: tight caches (preemptions), chunked and whole prefills, thresholds, graph modes."""

import numpy as np
import pytest

from costmodel.serving import SchedulerConfig, simulate, synthetic
from costmodel.serving.reference import simulate_reference
from tests.serving_util import toy_table

CASES = [  # (scheduler settings, blocks, rate, prompt, output, seed)
    (dict(max_num_seqs=16, max_num_batched_tokens=256, block_size=16, max_model_len=4096), 60, 50,
     "lognormal:200:1.0", "lognormal:60:1.0", 1),
    (dict(max_num_seqs=64, max_num_batched_tokens=512, block_size=8, max_model_len=2048, graphs="eager"), 400, 20,
     "uniform:1:900", "uniform:1:300", 2),
    (dict(max_num_seqs=8, max_num_batched_tokens=2048, block_size=16, max_model_len=2048, chunked_prefill=False),
     300, 30, "uniform:10:1500", "uniform:1:50", 3),
    (dict(max_num_seqs=32, max_num_batched_tokens=128, block_size=4, max_model_len=1024,
          long_prefill_token_threshold=48, graphs="graph"), 150, 100, "lognormal:100:0.7", "lognormal:20:1.2", 4),
]


@pytest.mark.parametrize("kw, blocks, rate, prompt, output, seed", CASES)
def test_kernel_equals_reference(kw, blocks, rate, prompt, output, seed):
    cfg = SchedulerConfig(**kw)
    reqs = synthetic(rate, count=400, prompt=prompt, output=output, seed=seed)
    table = toy_table(dense=(1e-3, 2e-6), head=1e-4, decode=(1e-6, 1e-8), chunk_per_pair=1e-9)
    a = simulate(reqs, table, cfg, blocks)
    b = simulate_reference(reqs, table, cfg, blocks)
    assert a.n_iterations == b.n_iterations
    for k in ("preemptions", "output", "refused"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    for k in ("scheduled_s", "first_token_s", "finish_s"):   # the same decisions; sums in another order
        np.testing.assert_allclose(getattr(a, k), getattr(b, k), rtol=1e-12, err_msg=k)
    np.testing.assert_allclose(a.energy_j, b.energy_j, rtol=1e-12)
    for k, v in a.iterations.items():
        if v.dtype == object:
            assert list(v) == list(b.iterations[k]), k
        else:
            np.testing.assert_allclose(v, b.iterations[k], rtol=1e-12, err_msg=k)
    assert a.reason == b.reason


def test_the_cases_exercise_preemption_and_refusal():
    cfg = SchedulerConfig(**CASES[0][0])
    a = simulate(synthetic(50, count=400, prompt="lognormal:200:1.0", output="lognormal:60:1.0", seed=1),
                 toy_table(dense=(1e-3, 2e-6)), cfg, 60)
    assert a.preemptions.sum() > 10 and a.refused.sum() > 0


def test_a_sink_gets_every_iteration_in_segments():
    cfg = SchedulerConfig(**CASES[1][0])
    reqs = synthetic(20, count=300, prompt="uniform:1:900", output="uniform:1:300", seed=2)
    table = toy_table(dense=(1e-3, 2e-6))
    whole = simulate(reqs, table, cfg, 400)
    got = []
    seg = simulate(reqs, table, cfg, 400, sink=got.append, chunk=1000)
    assert len(got) == -(-whole.n_iterations // 1000) and len(seg.iterations["start_s"]) == 0
    np.testing.assert_array_equal(np.concatenate([g["start_s"] for g in got]), whole.iterations["start_s"])
    np.testing.assert_array_equal(seg.finish_s, whole.finish_s)
