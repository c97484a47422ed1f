"""The cost table against the step model it is made of: one request alone on a100 takes the mapped
prefill step for its first token and the mapped decode steps at its contexts after (every figure
here from `sweep map`'s path, `sweep.commands.map_eval.map_network`)."""

import numpy as np
import pytest

from costmodel.serving import Deployment, Requests, SchedulerConfig, simulate
from costmodel.transformer import build_transformer
from sweep.commands.map_eval import load_arch, map_network
from sweep.serving.table_build import build_cost_table

P, O = 600, 3


def _a100_eager():
    """a100 launched eagerly in every phase (the simulations below run graphs="eager") and without
    the per-CTA DRAM limit of a decode kernel's few CTAs, which a step applies (it knows the batch)
    and a serving table does not (a part is one sequence; the batch's CTAs fill the device)."""
    import dataclasses
    a = load_arch("a100")
    return dataclasses.replace(a, gpu=dataclasses.replace(a.gpu, graph_phases=(), sm_dram_gbps=None))


@pytest.fixture(scope="module")
def setup():
    arch = _a100_eager()
    dep = Deployment("llama3_2_1b")
    grids = {"tokens": [1, P], "seqs": [1, 2], "contexts": [P + 1, P + 2], "chunk_q": [2, P], "chunk_p": [0, 16]}
    table = build_cost_table(dep, arch, "salsa", "latency", 0, {"iterations": 200}, max_tokens=P, max_seqs=2,
                             max_context=P + O, grids=grids)
    return arch, dep, table


def step_s(arch, **kw):
    net = build_transformer("llama3_2_1b", fusion="fused", **kw)
    res = map_network(net, arch, "salsa", "latency", 0, {"iterations": 200})
    return res["total"]["latency_cycles"] / (arch.clock_mhz * 1e6), res["total"]["energy_pj"] * 1e-12


def _alone_equals_steps(arch, table, step) -> None:
    """One request alone: its first token at the prefill step's time, its end after the decode
    steps at its contexts, its energy theirs (``step``: (s, J) of a step by its keywords)."""
    cfg = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=P, block_size=16, max_model_len=4096, graphs="eager")
    res = simulate(Requests(np.array([0.0]), np.array([P]), np.array([O]), "one"), table, cfg, num_blocks=100)
    ttft, e_pre = step(arch, phase="prefill", seq=P)
    dec = [step(arch, phase="decode", context=c) for c in (P + 1, P + 2)]
    assert res.first_token_s[0] == pytest.approx(ttft, rel=1e-9)
    assert res.finish_s[0] == pytest.approx(ttft + sum(d[0] for d in dec), rel=1e-9)
    assert res.energy_j[0] == pytest.approx(e_pre + sum(d[1] for d in dec), rel=1e-9)


def test_one_request_alone_is_the_prefill_step_then_the_decode_steps(setup):
    arch, _, table = setup
    _alone_equals_steps(arch, table, step_s)


def test_the_table_round_trips_through_json(setup):
    from costmodel.serving import CostTable
    import json
    _, _, table = setup
    back = CostTable.from_dict(json.loads(table.dumps()))
    q, p = np.array([1, 300, 600]), np.array([600, 0, 16])
    np.testing.assert_array_equal(back.attention(q, p)[0], table.attention(q, p)[0])
    assert back.dense(300) == table.dense(300)


@pytest.fixture(scope="module")
def pipeline():
    """Llama-3.2-1B in two pipeline stages on a100 (8 blocks a stage), NVLink 3 between them."""
    arch = _a100_eager()
    dep = Deployment("llama3_2_1b", pp=2)
    grids = {"tokens": [1, P], "seqs": [1, 2], "contexts": [P + 1, P + 2], "chunk_q": [2, P], "chunk_p": [0, 16]}
    table = build_cost_table(dep, arch, "salsa", "latency", 0, {"iterations": 200}, max_tokens=P, max_seqs=2,
                             max_context=P + O, grids=grids)
    return arch, dep, table


def system_s(arch, **kw):
    """The system step model's figures of a pp = 2 step (`costmodel.system.serving.system_step`: one
    micro-batch's round trip R through both stages, the hop between them, the head once)."""
    net = build_transformer("llama3_2_1b", fusion="fused", pp=2, **kw)
    res = map_network(net, arch, "salsa", "latency", 0, {"iterations": 200})
    sys_ = res["system"]
    return sys_["latency_s"], sys_["energy_j"]


def test_one_request_alone_in_a_pipeline_is_the_system_steps_round_trip(pipeline):
    arch, _, table = pipeline
    _alone_equals_steps(arch, table, system_s)


def test_a_pipeline_serves_two_requests_at_once_in_two_engines(pipeline):
    """pp = 2: two batches in flight (vLLM's virtual engines): two prompts arriving together are
    prefilled side by side, each as if alone, where one engine would run them in one iteration."""
    from sweep.serving.serve import pipeline_engines
    arch, dep, table = pipeline
    cfg = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=P, block_size=16, max_model_len=4096, graphs="eager")
    one, blocks = pipeline_engines(cfg, 100, 2)
    assert (one.max_num_seqs, blocks) == (1, 50)
    from costmodel.serving.disagg import Pool, serve_replicas
    two = Requests(np.array([0.0, 0.0]), np.array([P // 2, P // 2]), np.array([O, O]), "two")
    got = serve_replicas(two, Pool(table, one, blocks, 2))
    alone = simulate(Requests(np.array([0.0]), np.array([P // 2]), np.array([O]), "one"), table, one, num_blocks=blocks)
    np.testing.assert_allclose(got.first_token_s, [alone.first_token_s[0]] * 2, rtol=1e-12)
    shared = simulate(two, table, cfg, num_blocks=100)     # one engine: both prompts in one iteration
    assert shared.first_token_s[0] > alone.first_token_s[0]
