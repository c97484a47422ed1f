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


@pytest.fixture(scope="module")
def setup():
    arch = load_arch("a100")
    dep = Deployment("llama3_2_1b")
    grids = {"tokens": [1, P], "seqs": [1, 2], "contexts": [P + 1, P + 2], "chunk_q": [2, P], "chunk_p": [0, 16]}
    table = build_cost_table(dep, arch, "salsa", "latency", 0, {"iterations": 200}, max_tokens=P, max_seqs=2,
                             max_context=P + O, grids=grids)
    return arch, dep, table


def step_s(arch, **kw):
    net = build_transformer("llama3_2_1b", fusion="fused", **kw)
    res = map_network(net, arch, "salsa", "latency", 0, {"iterations": 200})
    return res["total"]["latency_cycles"] / (arch.clock_mhz * 1e6), res["total"]["energy_pj"] * 1e-12


def test_one_request_alone_is_the_prefill_step_then_the_decode_steps(setup):
    arch, dep, table = setup
    cfg = SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=P, block_size=16, max_model_len=4096, graphs="eager")
    res = simulate(Requests(np.array([0.0]), np.array([P]), np.array([O]), "one"), table, cfg, num_blocks=100)
    ttft, e_pre = step_s(arch, phase="prefill", seq=P)
    dec = [step_s(arch, phase="decode", context=c) for c in (P + 1, P + 2)]
    assert res.first_token_s[0] == pytest.approx(ttft, rel=1e-9)
    assert res.finish_s[0] == pytest.approx(ttft + sum(d[0] for d in dec), rel=1e-9)
    assert res.energy_j[0] == pytest.approx(e_pre + sum(d[1] for d in dec), rel=1e-9)


def test_the_table_round_trips_through_json(setup):
    from costmodel.serving import CostTable
    import json
    _, _, table = setup
    back = CostTable.from_dict(json.loads(table.dumps()))
    q, p = np.array([1, 300, 600]), np.array([600, 0, 16])
    np.testing.assert_array_equal(back.attention(q, p)[0], table.attention(q, p)[0])
    assert back.dense(300) == table.dense(300)
