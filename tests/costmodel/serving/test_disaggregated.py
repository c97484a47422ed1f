"""Colocated copies and a prefill / decode split, worked by hand with toy costs."""

import numpy as np
import pytest

from costmodel.serving import Requests, SchedulerConfig, request_figures, simulate
from costmodel.serving.disagg import Link, Pool, serve_disaggregated, serve_replicas
from tests.serving_util import toy_table

CFG = SchedulerConfig(max_num_seqs=64, max_num_batched_tokens=2048, block_size=16, max_model_len=65536,
                      graphs="eager")


def reqs(arrival, prompt, output):
    return Requests(np.asarray(arrival, float), np.asarray(prompt), np.asarray(output), "by hand")


def test_one_request_prefills_sends_its_cache_then_decodes():
    # prefill pool: 2 s an iteration; decode pool: 1 s; 1,000 tokens x 100 kB over 1 GB/s + 5 us
    pre, dec = Pool(toy_table(dense=(2.0, 0.0)), CFG, 1000), Pool(toy_table(dense=(1.0, 0.0)), CFG, 1000)
    link = Link(1e9, 5e-6, pj_per_bit=1.0)
    res = serve_disaggregated(reqs([0.0], [1000], [4]), pre, dec, link, kv_bytes_per_token=1e5)
    transfer = 5e-6 + 1000 * 1e5 / 1e9
    assert res.first_token_s[0] == 2.0
    assert res.finish_s[0] == pytest.approx(2.0 + transfer + 3.0)     # its other 3 tokens, 1 s each
    assert res.stats["transfer_s"] == pytest.approx(transfer)
    assert res.stats["transfer_j"] == pytest.approx(1000 * 1e5 * 8 * 1e-12)
    it = res.iterations
    assert list(it["pool"]) == ["prefill", "decode", "decode", "decode"]
    assert it["tokens"].tolist() == [1000, 1, 1, 1]       # the decode pool never recomputes the prompt
    assert res.output.tolist() == [4]


def test_a_one_token_answer_never_reaches_the_decode_pool():
    pre, dec = Pool(toy_table(dense=(2.0, 0.0)), CFG, 1000), Pool(toy_table(), CFG, 1000)
    res = serve_disaggregated(reqs([0.0, 0.0], [10, 10], [1, 2]), pre, dec, Link(1e12), 1.0)
    assert res.finish_s[0] == 2.0 and list(res.iterations["pool"]).count("decode") == 1


def test_decode_instances_share_the_requests_round_robin():
    pre = Pool(toy_table(dense=(1.0, 0.0)), CFG, 1000, instances=1)
    dec = Pool(toy_table(dense=(1.0, 0.0)), CFG, 1000, instances=2)
    res = serve_disaggregated(reqs([0, 0, 0, 0], [10] * 4, [3] * 4), pre, dec, Link(1e12), 1.0)
    inst = res.iterations["instance"][res.iterations["pool"] == "decode"]
    assert sorted(set(inst.tolist())) == [0, 1]
    f = request_figures(res)
    assert f["tpot_s"].tolist() == pytest.approx([1.0] * 4, rel=1e-6)


def test_colocated_copies_serve_as_if_alone():
    t = toy_table(dense=(1.0, 0.0))
    r = reqs([0.0, 0.0], [100, 100], [3, 3])
    two = serve_replicas(r, Pool(t, CFG, 1000, instances=2))
    alone = simulate(reqs([0.0], [100], [3]), t, CFG, 1000)
    assert two.finish_s.tolist() == [alone.finish_s[0]] * 2
    one = serve_replicas(r, Pool(t, CFG, 1000, instances=1))
    np.testing.assert_array_equal(one.finish_s, simulate(r, t, CFG, 1000).finish_s)


@pytest.mark.parametrize("simulate_", ["kernel", "reference"])
def test_prefilled_requests_start_at_their_first_decode(simulate_):
    from costmodel.serving.reference import simulate_reference
    sim = simulate if simulate_ == "kernel" else simulate_reference
    res = sim(reqs([0.0], [100], [3]), toy_table(dense=(1.0, 0.0)), CFG, 100, prefilled=np.array([True]))
    assert res.n_iterations == 2 and res.finish_s[0] == 2.0 and res.iterations["tokens"].tolist() == [1, 1]
    assert res.iterations["kv_blocks_used"].tolist() == [7, 7]    # ceil(101 / 16), ceil(102 / 16)
