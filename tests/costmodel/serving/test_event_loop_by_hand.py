"""The event loop against cases worked by hand from vLLM V1's scheduling rules
(`costmodel.serving.simulate`'s docstring): toy costs, so every iteration's time is known."""

import numpy as np
import pytest

from costmodel.serving import SchedulerConfig, Requests, simulate, summary, request_figures
from costmodel.serving.reference import simulate_reference
from tests.serving_util import toy_table

#: the compiled loop and its plain-Python statement: every case holds for both
both = pytest.mark.parametrize("simulate", [simulate, simulate_reference], ids=["kernel", "reference"])


def reqs(arrival, prompt, output):
    return Requests(np.asarray(arrival, float), np.asarray(prompt), np.asarray(output), "by hand")


CFG = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=2048, block_size=16, max_model_len=65536,
                      graphs="eager")


@both
def test_one_request_alone_prefill_then_one_decode_step_per_further_token(simulate):
    # dense 1 ms + 1 us/token, a decode's attention 1 us + 1 ns per cached token, chunks 0
    t = toy_table(dense=(1e-3, 1e-6), decode=(1e-6, 1e-9))
    res = simulate(reqs([0.0], [100], [4]), t, CFG, num_blocks=1000)
    prefill = 1e-3 + 100e-6
    decodes = [1e-3 + 1e-6 + 1e-6 + 1e-9 * c for c in (101, 102, 103)]   # contexts 101..103
    assert res.first_token_s[0] == pytest.approx(prefill, rel=1e-12)
    assert res.finish_s[0] == pytest.approx(prefill + sum(decodes), rel=1e-12)
    assert res.n_iterations == 4
    f = request_figures(res)
    assert f["tpot_s"][0] == pytest.approx(sum(decodes) / 3, rel=1e-12)


@both
def test_a_prompt_longer_than_the_token_budget_is_split_into_chunks(simulate):
    t = toy_table(dense=(1.0, 0.0))
    res = simulate(reqs([0.0], [5000], [2]), t, CFG, num_blocks=1000)
    assert res.iterations["tokens"].tolist() == [2048, 2048, 904, 1]
    assert res.iterations["prefill_tokens"].tolist() == [2048, 2048, 904, 0]
    assert res.first_token_s[0] == 3.0 and res.finish_s[0] == 4.0
    # the KV blocks grow chunk by chunk: ceil(2048 / 16), ceil(4096 / 16), ceil(5000 / 16), ceil(5001 / 16)
    assert res.iterations["kv_blocks_used"].tolist() == [128, 256, 313, 313]


def test_chunks_after_a_prefix_are_priced_with_their_prefix():
    seen = []
    t = toy_table(dense=(1.0, 0.0))
    orig = t.attention

    def spy(q, p):
        seen.append((np.asarray(q).tolist(), np.asarray(p).tolist()))
        return orig(q, p)

    t.attention = spy
    simulate_reference(reqs([0.0], [5000], [2]), t, CFG, num_blocks=1000)
    assert seen == [([2048], [0]), ([2048], [2048]), ([904], [4096]), ([1], [5000])]


@both
def test_two_requests_share_iterations(simulate):
    # every iteration 1 s whatever it holds: A (P 100, O 3) at 0, B (P 50, O 2) at 0.5
    t = toy_table(dense=(1.0, 0.0))
    res = simulate(reqs([0.0, 0.5], [100, 50], [3, 2]), t, CFG, num_blocks=1000)
    # [0, 1): A's prompt; [1, 2): A's decode + B's prompt (51 tokens); [2, 3): both decode, both done
    assert res.iterations["tokens"].tolist() == [100, 51, 2]
    assert res.iterations["sequences"].tolist() == [1, 2, 2]
    f = request_figures(res)
    assert f["ttft_s"].tolist() == [1.0, 1.5]
    assert f["e2e_s"].tolist() == [3.0, 2.5]
    assert f["tpot_s"].tolist() == [1.0, 1.0]
    assert f["queue_s"].tolist() == [0.0, 0.5]


@both
def test_the_cache_runs_out_and_the_last_request_is_preempted_and_recomputed(simulate):
    # 3 blocks of 16: A (P 16, O 30: 46 tokens, 3 blocks) and B (P 16, O 20: 36, 3 blocks), both at 0.
    # [0,1): both prefill (1 block each), a token each. [1,2): A grows to 2 blocks (the last free one);
    # B needs a 2nd: the last running request is B itself -> preempted, blocks freed, to the waiting
    # head with its computed tokens reset; no waiting request admitted this iteration. B needs 2 blocks
    # to recompute its 17 tokens and 1 is free until A finishes (A: 29 decodes after its prompt, done
    # at 30). [30,31): B recomputes 17 tokens and samples its 2nd; 18 more decodes: done at 49.
    t = toy_table(dense=(1.0, 0.0))
    res = simulate(reqs([0.0, 0.0], [16, 16], [30, 20]), t, CFG, num_blocks=3)
    assert res.preemptions.tolist() == [0, 1]
    assert res.finish_s.tolist() == [30.0, 49.0]
    assert res.first_token_s.tolist() == [1.0, 1.0]     # B's first token stays the one it got
    assert res.n_iterations == 49
    tok = res.iterations["tokens"].tolist()
    assert tok[:3] == [32, 1, 1] and tok[30] == 17
    assert res.iterations["prefill_tokens"][30] == 17
    assert summary(res)["preemptions"] == 1


@both
def test_a_request_the_cache_can_never_hold_is_refused_with_its_numbers(simulate):
    t = toy_table(dense=(1.0, 0.0))
    res = simulate(reqs([0.0, 0.0], [40, 10], [20, 5]), t, CFG, num_blocks=3)
    assert res.refused.tolist() == [True, False]
    assert "needs 4 KV blocks (60 tokens of 16) and the cache has 3 (48 tokens)" in res.reason[0]
    s = summary(res)
    assert s["refused"] == 1 and s["served"] == 1


@both
def test_max_num_seqs_bounds_the_running_requests(simulate):
    cfg = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=2048, block_size=16, max_model_len=4096,
                          graphs="eager")
    res = simulate(reqs([0, 0, 0], [10, 10, 10], [2, 2, 2]), toy_table(), cfg, num_blocks=100)
    # [0,1): A, B prefill; [1,2): A, B decode, both done; [2,3): C prefill; [3,4): C decode
    assert res.iterations["sequences"].tolist() == [2, 2, 1, 1]
    assert res.finish_s.tolist() == [2.0, 2.0, 4.0]


@both
def test_without_chunked_prefill_a_prompt_waits_for_a_budget_that_holds_it_whole(simulate):
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=100, block_size=4, max_model_len=100,
                          chunked_prefill=False, graphs="eager")
    # A (P 60) is admitted; B (P 60) does not fit the 40 tokens left: skipped, C (P 30) is admitted
    res = simulate(reqs([0, 0, 0], [60, 60, 30], [2, 2, 2]), toy_table(), cfg, num_blocks=1000)
    assert res.iterations["tokens"].tolist()[:2] == [90, 62]   # then A, C decode + B's whole prompt
    assert res.first_token_s.tolist() == [1.0, 2.0, 1.0]


@both
def test_output_past_max_model_len_is_cut_there(simulate):
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=256, block_size=16, max_model_len=110,
                          graphs="eager")
    res = simulate(reqs([0], [100], [50]), toy_table(), cfg, num_blocks=100)
    assert res.output.tolist() == [10] and res.truncated == 1 and res.n_iterations == 10
