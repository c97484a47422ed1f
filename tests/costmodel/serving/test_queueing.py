"""The event loop against queueing theory where it applies."""

import numpy as np
import pytest

from costmodel.serving import SchedulerConfig, simulate, summary, synthetic
from tests.serving_util import toy_table


def test_a_batch_one_server_with_deterministic_service_waits_as_m_d_1():
    # max_num_seqs 1 and one-token answers: each request is one iteration of D = 10 ms (prefill,
    # first token, done), served FCFS: an M/D/1 queue. Mean wait in queue rho / (2 mu (1 - rho)).
    D, rho = 0.01, 0.7
    cfg = SchedulerConfig(max_num_seqs=1, max_num_batched_tokens=16, block_size=16, max_model_len=64,
                          graphs="eager")
    reqs = synthetic(rho / D, count=40000, prompt="8", output="1", seed=3)
    res = simulate(reqs, toy_table(dense=(D, 0.0)), cfg, num_blocks=10)
    wait = np.mean(res.scheduled_s - reqs.arrival_s)
    mu = 1 / D
    assert wait == pytest.approx(rho / (2 * mu * (1 - rho)), rel=0.04)   # 11.67 ms; 40k requests: ~1.5% s.e.
    assert summary(res)["ttft_s"]["mean"] == pytest.approx(wait + D, rel=0.04)


def test_throughput_plateaus_at_the_saturated_iteration_rate():
    # 8 running at most, 10 ms an iteration whatever it holds, one-token prompts, 100 output tokens:
    # saturated, every iteration yields 8 tokens: 800 tokens/s (8 req/s); offered 2x and 4x that.
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=64, block_size=16, max_model_len=256,
                          graphs="eager")
    t = toy_table(dense=(0.01, 0.0))
    tput = []
    for rate in (16, 32):
        res = simulate(synthetic(rate, count=2000, prompt="1", output="100", seed=1), t, cfg, num_blocks=10000)
        tput.append(summary(res)["output_tokens_per_s"])
    assert tput[0] == pytest.approx(800, rel=0.01)
    assert tput[1] == pytest.approx(800, rel=0.01)
    # below capacity the output rate follows the offered load instead
    res = simulate(synthetic(4, count=2000, prompt="1", output="100", seed=1), t, cfg, num_blocks=10000)
    assert summary(res)["output_tokens_per_s"] == pytest.approx(400, rel=0.05)
