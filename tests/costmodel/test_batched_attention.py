"""Batched attention (`build_transformer(batched_attention=True)`): attention's batch x KV-head
instances as the loop dim G of one matmul per block; the same work as the serial step, mapped with
G over an array dim that allows it (a100's SMs), and the same figures where none does (llm_ws)."""

import math

import pytest

from costmodel.transformer import build_transformer, parse_step_name
from sweep import api


def _att(net):
    return [(l.name, l.B, l.C, l.K, l.G, r) for l, r in net if l.w_role == "kv_cache"]


def test_the_step_by_hand():
    # Llama-3-8B: 8 KV heads, groups of 4 query heads, head dim 128, 32 blocks; unfused attention
    # (score and context whole, through memory)
    kw = dict(phase="decode", batch=8, context=4096, fusion="unfused")
    serial = build_transformer("llama3_8b", **kw)
    batched = build_transformer("llama3_8b", batched_attention=True, **kw)
    assert _att(serial) == [("score", 4, 128, 4096, 1, 8 * 8 * 32), ("context", 4, 4096, 128, 1, 8 * 8 * 32)]
    assert _att(batched) == [("score", 4, 128, 4096, 64, 32), ("context", 4, 4096, 128, 64, 32)]
    assert batched.macs == serial.macs and batched.vector_ops == serial.vector_ops
    assert batched.name == "llama3_8b/decode/b8/ctx4096/unfused/batched"
    assert parse_step_name(batched.name) == ("llama3_8b", {"phase": "decode", "batch": 8, "context": 4096,
                                                           "fusion": "unfused", "batched_attention": True})
    # the default (fused) step: no fusion tag
    fused = build_transformer("llama3_8b", phase="decode", batch=8, context=4096, batched_attention=True)
    assert fused.name == "llama3_8b/decode/b8/ctx4096/batched" and fused.workload["fusion"] == "fused"
    assert parse_step_name(fused.name) == ("llama3_8b", {"phase": "decode", "batch": 8, "context": 4096,
                                                         "batched_attention": True})
    # only a batched step's workload names it (the serial step's config hash is what it was)
    assert batched.workload["batched_attention"] is True and "batched_attention" not in serial.workload
    # causal prefill, fused: every tile batched, repeats per block
    f = build_transformer("llama3_8b", phase="prefill", batch=2, seq=512, fusion="fused", batched_attention=True)
    g = build_transformer("llama3_8b", phase="prefill", batch=2, seq=512, fusion="fused")
    assert [(n, b, c, k, 16, r // 16) for n, b, c, k, _, r in _att(g)] == _att(f)
    with pytest.raises(ValueError, match="batched_attention: must be true or false"):
        build_transformer("llama3_8b", batched_attention="yes")


def test_on_an_array_without_g_the_figures_are_the_serial_steps():
    # llm_ws's hint unrolls no G: the instances run one after another either way
    kw = dict(phase="prefill", batch=2, seq=256)
    a = api.map_network(build_transformer("llama3_2_1b", **kw), "llm_ws", "salsa", "latency").total
    b = api.map_network(build_transformer("llama3_2_1b", batched_attention=True, **kw), "llm_ws", "salsa",
                        "latency").total
    assert b["latency_cycles"] == pytest.approx(a["latency_cycles"], rel=1e-9)
    assert b["energy_pj"] == pytest.approx(a["energy_pj"], rel=1e-6)


def test_on_the_a100_the_sms_take_the_instances():
    kw = dict(phase="decode", batch=8, context=1024, fusion="unfused")   # context: one matmul per instance
    a = api.map_network(build_transformer("llama3_2_1b", **kw), "a100", "salsa", "latency")
    b = api.map_network(build_transformer("llama3_2_1b", batched_attention=True, **kw), "a100", "salsa", "latency")
    ctx_a = next(r for r in a.rows if r["layer"] == "context")
    ctx_b = next(r for r in b.rows if r["layer"] == "context")
    def pes(sp):   # MACs the unrolling keeps busy
        return math.prod(f for loops in sp.values() for _, f in loops)
    assert any(d == "G" for d, _ in ctx_b["spatial"]["D1"]) and all(d != "G" for d, _ in ctx_a["spatial"].get("D1", []))
    # one instance's context matmul has 4 query rows and 128 output columns to spread (measured: 4,096
    # MACs busy); 64 instances side by side fill each SM's 8 x 8 x 16 tile (32,768)
    assert pes(ctx_b["spatial"]) >= 8 * pes(ctx_a["spatial"])
    # the same step, never slower
    assert b.total["latency_cycles"] <= a.total["latency_cycles"] * (1 + 1e-9)


def test_campaign_key_and_cli(tmp_path):
    from typer.testing import CliRunner

    from sweep.cli import app
    from sweep.config.networks import parse_networks
    found = []
    nets = parse_networks([{"model": "llama3_2_1b", "phase": "decode", "batched_attention": [False, True]}], tmp_path,
                          lambda *a: found.append(a))
    assert not found and [n.name for n in nets] == ["llama3_2_1b/decode/b1/ctx4096", "llama3_2_1b/decode/b1/ctx4096/batched"]
    parse_networks([{"model": "llama3_2_1b", "batched_attention": "yes"}], tmp_path, lambda *a: found.append(a))
    assert found[0][0] == "networks[0].batched_attention" and found[0][1] == "yes"
    r = CliRunner().invoke(app, ["list", "networks", "llama3_2_1b", "--phase", "decode", "--batched-attention", "--json"])
    assert r.exit_code == 0, r.output
    assert '"G": 8' in r.output.replace("\n", " ").replace("  ", " ") or '"G":8' in r.output
