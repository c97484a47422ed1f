"""The command line and Python API of LLM inference steps (issue 28), with outcomes checked by hand:
`sweep list networks` of a step (every operation, MACs, parameters), the step options and their
errors (exit 2, the option named), `sweep map` of a GPT-2 decode step on tpu_like (serving
figures, the matmul / vector split, DRAM traffic by role against a hand count), campaign
expansion of transformer steps, `sweep.api.load_network` with step keywords, and an accelerator
without a vector unit.

Shapes: the published configs (GPT-2 small: hidden 768, 12 blocks, 12 heads of 64, FFN 3072,
vocab 50257, LM head tied to the token embedding; Llama 3 8B: hidden 4096, 32 blocks, 32 heads,
8 KV heads, head_dim 128, FFN 14336 SwiGLU, vocab 128256, untied head). Hardware: tpu_like.toml
(32 x 32 array, 8-bit W / I / O_final, DRAM word 128 bits on one shared port, 700 MHz).

The hand counts are of unfused steps (score, softmax and context as separate operations through
DRAM), so those steps are built with ``--fusion unfused`` (the default is fused attention); GPT-2's
config.json states no dtype, so its steps keep tpu_like's 8-bit [precision]."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel.transformer import build_transformer
from paths import REPO
from sweep import api
from sweep.cli import app
from sweep.common.errors import CampaignError

runner = CliRunner()
TPU_TOML = REPO / "costmodel" / "presets" / "tpu_like.toml"
MODELS = ("bert_base", "gpt2", "llama3_2_1b", "llama3_8b", "llama3_70b", "mixtral_8x7b", "vit_b16")


def _json(args: list[str]) -> dict:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _flat(text: str) -> str:
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


# ----------------------------------------------------------------------------- sweep list networks


def test_list_networks_has_the_seven_models():
    names = {r["name"] for r in _json(["list", "networks", "--json"])}
    assert set(MODELS) <= names
    res = runner.invoke(app, ["list", "networks"], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and all(m in res.output for m in MODELS)


def test_list_llama3_8b_decode_step_by_hand():
    """Decode at batch 8 (T = 8 tokens), context 4096, per block (x 32):
      q, o: 8 x 4096 x 4096 = 134,217,728 MACs each; k, v: 8 x 4096 x 1024 = 33,554,432 each;
      score: per (sequence, KV head) 4 query rows x 128 x 4096 = 2,097,152, x 8 x 8 = 134,217,728;
      context: 4 x 4096 x 128, the same 134,217,728; gate, up, down: 8 x 4096 x 14336 = 469,762,048
      each. Block: 2 x 134,217,728 + 2 x 33,554,432 + 2 x 134,217,728 + 3 x 469,762,048
      = 2,013,265,920; x 32 = 64,424,509,440; LM head 8 x 4096 x 128256 = 4,202,692,608;
      total 68,627,202,048.
    Parameters: embedding and untied head 2 x 128256 x 4096 = 1,050,673,152; attention
    32 x (2 x 4096^2 + 2 x 4096 x 1024) = 1,342,177,280; FFN 32 x 3 x 4096 x 14336 = 5,637,144,576;
    RMSNorm gains (2 x 32 + 1) x 4096 = 266,240; total 8,030,261,248. The unfused step: score,
    softmax and context as operations of their own."""
    d = _json(["list", "networks", "llama3_8b", "--phase", "decode", "--batch", "8", "--context", "4096",
               "--fusion", "unfused", "--json"])
    B, L, h, q, kv, hd, ctx, f, V = 8, 32, 4096, 4096, 1024, 128, 4096, 14336, 128256
    block = 2 * B * h * q + 2 * B * h * kv + 2 * B * 32 * hd * ctx + 3 * B * h * f
    assert block == 2_013_265_920
    assert d["total_macs"] == L * block + B * h * V == 68_627_202_048
    assert d["params"] == d["published_params"] == 2 * V * h + L * (2 * h * q + 2 * h * kv) + L * 3 * h * f \
        + (2 * L + 1) * h == 8_030_261_248
    assert d["network"] == "llama3_8b/decode/b8/ctx4096/unfused"
    assert d["workload"]["tokens"] == 8 and d["workload"]["context"] == 4096
    # every matmul: (B rows, C contracted, K columns, repeats, MACs)
    layers = {r["name"]: (r["B"], r["C"], r["K"], r["repeat"], r["macs"]) for r in d["layers"]}
    assert layers == {
        "q_proj": (8, 4096, 4096, 32, 134_217_728), "k_proj": (8, 4096, 1024, 32, 33_554_432),
        "v_proj": (8, 4096, 1024, 32, 33_554_432),
        "score": (4, 128, 4096, 8 * 8 * 32, 2_097_152), "context": (4, 4096, 128, 8 * 8 * 32, 2_097_152),
        "o_proj": (8, 4096, 4096, 32, 134_217_728), "ffn_gate": (8, 4096, 14336, 32, 469_762_048),
        "ffn_up": (8, 4096, 14336, 32, 469_762_048), "ffn_down": (8, 14336, 4096, 32, 469_762_048),
        "lm_head": (8, 4096, 128256, 1, 4_202_692_608)}
    assert all(r["kind"] == "matmul" for r in d["layers"])
    # every vector op: (op, elements, inputs, rows, repeats); T = 8, per block unless noted
    ops = {r["name"]: (r["op"], r["elements"], r["inputs"], r["rows"], r["repeat"]) for r in d["vector_ops"]}
    assert ops == {
        "attn_norm": ("rmsnorm", 8 * 4096, 1, 8, 32),            # T x hidden, one row per token
        "rope_q": ("rope", 8 * 4096, 1, 8, 32),                  # T x heads x head_dim, a row per token
        "rope_k": ("rope", 8 * 1024, 1, 8, 32),                  # T x kv_heads x head_dim
        "softmax": ("softmax", 8 * 32 * 4096, 1, 8 * 32, 32),    # batch x heads rows of 4096 scores
        "attn_residual": ("add", 8 * 4096, 2, 8, 32),
        "ffn_norm": ("rmsnorm", 8 * 4096, 1, 8, 32),
        "act": ("silu", 8 * 14336, 1, 8, 32),
        "gate_mul": ("mul", 8 * 14336, 2, 8, 32),
        "ffn_residual": ("add", 8 * 4096, 2, 8, 32),
        "final_norm": ("rmsnorm", 8 * 4096, 1, 8, 1)}            # once, before the LM head
    # 32 x (5 x 32,768 + 8,192 + 1,048,576 + 2 x 114,688) + 32,768 = 46,432,256
    assert d["total_vector_elements"] == 32 * (5 * 32768 + 8192 + 1048576 + 2 * 114688) + 32768 == 46_432_256


@pytest.mark.parametrize("args, option", [
    (["resnet18", "--phase", "decode"], "--phase"),
    (["bert_base", "--phase", "decode"], "--phase"),
    (["gpt2", "--phase", "prefill", "--context", "16"], "--context"),
    (["gpt2", "--weight-bits", "3"], "--weight-bits"),
    (["gpt2", "--batch", "0"], "--batch"),
], ids=["decode-on-cnn", "decode-on-encoder", "context-at-prefill", "weight-bits-3", "batch-0"])
def test_bad_step_options_exit_2_naming_the_option(tmp_path, monkeypatch, args, option):
    """Each in `sweep list networks` and `sweep map`: exit 2, the option named, nothing written."""
    monkeypatch.chdir(tmp_path)
    for cmd in (["list", "networks", *args],
                ["map", "--network", *args, "--arch", "tpu_like", "--mapper", "random",
                 "--param", "max_samples=10"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2, res.output
        assert option in _flat(res.output), res.output
        assert "Traceback" not in res.output
    assert not any(Path(tmp_path).iterdir())


# ----------------------------------------------------------------------------- sweep map, GPT-2 decode

GPT2_MAP = ["map", "--network", "gpt2", "--phase", "decode", "--batch", "1", "--context", "64",
            "--fusion", "unfused", "--arch", "tpu_like", "--mapper", "loma"]


@pytest.fixture(scope="module")
def gpt2_decode() -> dict:
    return _json(GPT2_MAP + ["--json"])


def test_gpt2_decode_serving_figures(gpt2_decode):
    """time per token = the step's latency / 700e6 (tpu_like's clock, 700 MHz); tokens/s = 1 / that
    at batch 1; energy per token = the step's energy (pJ x 1e-12 J) / 1 token."""
    clock = tomllib.loads(TPU_TOML.read_text())["clock_mhz"]
    assert clock == 700.0
    tot, llm = gpt2_decode["total"], gpt2_decode["llm"]
    assert llm["phase"] == "decode" and llm["clock_mhz"] == 700.0 and llm["matmul_only"] is False
    assert llm["time_per_token_s"] == pytest.approx(tot["latency_cycles"] / 700e6, rel=1e-12)
    assert llm["tokens_per_s"] == pytest.approx(700e6 / tot["latency_cycles"], rel=1e-12)
    assert llm["energy_per_token_j"] == pytest.approx(tot["energy_pj"] * 1e-12, rel=1e-12)
    assert tot["matmul_energy_pj"] + tot["vector_energy_pj"] == pytest.approx(tot["energy_pj"], rel=1e-12)
    assert tot["matmul_latency_cycles"] + tot["vector_latency_cycles"] == pytest.approx(tot["latency_cycles"], rel=1e-12)
    assert tot["vector_energy_pj"] > 0 and tot["vector_latency_cycles"] > 0


def test_gpt2_decode_dram_traffic_by_hand(gpt2_decode):
    """At 8 bits (tpu_like [precision]), in bits:
    weights: per block q, k, v, o 4 x 768 x 768 = 2,359,296 + FFN 2 x 768 x 3072 = 4,718,592
      -> 7,077,888; x 12 = 84,934,656; the LM head (tied to the token embedding, but a matmul
      768 x 50257 that reads it) 38,597,376; 123,532,032 weights x 8 = 988,256,256 bits: each
      weight read once.
    KV cache: read, per (block, head): K and V of 64 tokens x 64 = 4096 B each -> 2 x 12 x 12 x
      4096 x 8 = 9,437,184; written: k and v projections 768 B each per block -> 2 x 12 x 768 x 8
      = 147,456; 9,584,640 bits.
    activations (each layer reads its input and writes its output once): q, o 2 x (768 + 768);
      k, v 768 each (their output is cache); score 64 + 64 and context 64 + 64 per head; up
      768 + 3072, down 3072 + 768: per block 3072 + 1536 + 12 x 256 + 7680 = 15,360 B; x 12 =
      184,320 B; LM head 768 + 50,257 = 51,025 B; 235,345 B = 1,882,760 bits.
    vector ops (unfused: each reads its inputs from and writes its output to DRAM, where the
      matmuls put them, one home per tensor), per block: attn_norm 768 + 768, softmax 12 x 64 +
      12 x 64, attn_residual 2 x 768 + 768, ffn_norm 768 + 768, GELU 3072 + 3072, ffn_residual
      2 x 768 + 768, bias_add (q, k, v, o, up, down: 4 x 768 + 3072 + 768 = 6,912) 6,912 + 6,912:
      29,184 B; x 12 = 350,208 B; pos_add 2 x 768 + 768, final_norm 768 + 768: 354,048 B =
      2,832,384 bits."""
    dram = gpt2_decode["total"]["dram_bits"]
    weights = (12 * (4 * 768 * 768 + 2 * 768 * 3072) + 768 * 50257) * 8
    assert weights == 988_256_256
    assert dram["weights"] >= weights
    assert dram["weights"] == weights
    assert dram["kv_cache"] == 2 * 12 * 12 * 64 * 64 * 8 + 2 * 12 * 768 * 8 == 9_584_640
    act = (12 * (2 * (768 + 768) + 2 * 768 + 12 * (64 + 64 + 64 + 64) + (768 + 3072) + (3072 + 768))
           + 768 + 50257) * 8
    assert act == 1_882_760
    vec = (12 * ((768 + 768) + (768 + 768) + 3 * 768 + (768 + 768) + 2 * 3072 + 3 * 768 + 2 * 6912)
           + 3 * 768 + 2 * 768) * 8
    assert vec == 2_832_384 == gpt2_decode["vector"]["total"]["dram_bits"]
    assert dram["activations"] == act + vec


def test_gpt2_decode_matmul_latency_by_hand(gpt2_decode):
    """Batch-1 decode on tpu_like: every matmul is bound by the one shared DRAM port (128 bits per
    cycle = one 8-bit word of 16 elements per cycle); the latency of each is its DRAM words:
    q/o and k/v (merged by shape, 24 executions each): (768 x 768 + 768 + 768) / 16 = 36,960;
    score/context (equal shapes at context 64: 64 x 64, merged, 2 x 12 x 12 = 288 executions):
    (4096 + 64 + 64) / 16 = 264 (the array computes 2 x 2 = 4 cycles);
    up, down (12 each): (768 x 3072 + 768 + 3072) / 16 = 147,696;
    lm_head: W 768 x 50257 / 16 = 2,412,336, I 768 / 16 = 48, O 50257 over 32 columns is padded to
    1571 x 32 = 50,272: 50,272 / 16 = 3142 words x 50257 / 50272 real = 3141.0625 -> 2,415,525.0625.
    Step: 24 x 36,960 x 2 + 288 x 264 + 24 x 147,696 + 2,415,525.0625 = 7,810,341.0625 cycles."""
    rows = {r["layer"]: (r["repeat"], r["latency_cycles"]) for r in gpt2_decode["layers"]}
    assert rows == {"q_proj": (24, 36_960), "k_proj": (24, 36_960), "score": (288, 264),
                    "ffn_up": (12, 147_696), "ffn_down": (12, 147_696), "lm_head": (1, 2_415_525.0625)}
    assert gpt2_decode["total"]["matmul_latency_cycles"] == 24 * 36_960 * 2 + 288 * 264 + 24 * 147_696 \
        + 2_412_336 + 48 + 3142 * 50257 / 50272 == 7_810_341.0625


def test_gpt2_decode_one_operation():
    """--layer score maps that one matmul: K of one head (64 tokens x 64) = 4096 B = 256 words, q
    64 B = 4 words, scores 64 B = 4 words: 264 cycles on the DRAM port."""
    d = _json(GPT2_MAP + ["--layer", "score", "--json"])
    assert d["layer"] == "score" and "llm" not in d and "layers" not in d
    assert d["latency_cycles"] == 264


# ----------------------------------------------------------------------------- campaigns and the API


CAMPAIGN = """name = "llm_steps"
output = "{out}"
networks = [{networks}]
[architectures]
kind = "loopnest"
presets = ["tpu_like"]
[[mappers]]
name = "random"
params = {{ max_samples = 20 }}
"""


def test_campaign_expands_transformer_steps(tmp_path):
    """batch [1, 2] x context [32, 64], the keys in their written order, the last fastest."""
    from sweep.kinds import load_campaign
    out = tmp_path / "out"
    p = tmp_path / "c.toml"
    p.write_text(CAMPAIGN.format(out=out.as_posix(),
                                 networks='{model = "gpt2", phase = "decode", batch = [1, 2], context = [32, 64]}'))
    res = runner.invoke(app, ["validate", str(p)])
    assert res.exit_code == 0, res.output
    assert "4 network(s)" in _flat(res.output)
    assert [n.name for n in load_campaign(p).networks] == [
        "gpt2/decode/b1/ctx32", "gpt2/decode/b1/ctx64", "gpt2/decode/b2/ctx32", "gpt2/decode/b2/ctx64"]
    assert not out.exists()


def test_campaign_bad_step_value_names_its_key(tmp_path):
    out = tmp_path / "out"
    p = tmp_path / "c.toml"
    p.write_text(CAMPAIGN.format(out=out.as_posix(), networks='{model = "gpt2", phase = "decodee"}'))
    res = runner.invoke(app, ["validate", str(p)])
    assert res.exit_code == 2, res.output
    assert "networks[0].phase = 'decodee'" in _flat(res.output)
    assert not out.exists()


def test_api_load_network_with_step_keywords():
    net = api.load_network("llama3_8b", phase="decode", batch=8, context=4096)
    built = build_transformer("llama3_8b", phase="decode", batch=8, context=4096)
    assert net == built and net.workload == built.workload  # workload is not part of ==
    assert net.name == "llama3_8b/decode/b8/ctx4096"
    with pytest.raises(CampaignError) as e:
        api.load_network("llama3_8b", phase="decode", contxt=4096)
    assert e.value.problems[0].key == "contxt" and "contxt" in str(e.value)


# ----------------------------------------------------------------------------- no vector unit


def _no_vector_unit(tmp_path):
    text = TPU_TOML.read_text()
    assert "\n[vector]\n" in text
    p = tmp_path / "tpu_no_vector.toml"
    p.write_text(text[:text.index("\n[vector]\n")] + "\n")
    assert "vector" not in tomllib.loads(p.read_text())
    return p


NO_VEC_MAP = ["map", "--network", "gpt2", "--phase", "decode", "--context", "16", "--fusion", "unfused",
              "--mapper", "loma"]


def test_accelerator_without_a_vector_unit(tmp_path):
    """The vector ops are not costed: a line says so, the totals are the matmuls' only and the
    serving figures say "matmuls only"."""
    arch = str(_no_vector_unit(tmp_path))
    res = runner.invoke(app, NO_VEC_MAP + ["--arch", arch], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    text = _flat(res.output)
    assert "not costed:" in text and "declares no vector unit" in text and "(matmuls only)" in text
    d = _json(NO_VEC_MAP + ["--arch", arch, "--json"])
    tot = d["total"]
    assert "vector_energy_pj" not in tot and "vector_latency_cycles" not in tot
    assert tot["energy_pj"] == tot["matmul_energy_pj"] and tot["latency_cycles"] == tot["matmul_latency_cycles"]
    assert d["vector"]["costed"] is False and d["llm"]["matmul_only"] is True
    # GPT-2's vector ops: pos_add, attn_norm, softmax, attn_residual, ffn_norm, act (GELU),
    # ffn_residual, bias_add, final_norm
    assert "9 vector operation(s)" in d["vector"]["not_costed"]


def test_not_costed_line_keeps_the_toml_table_names(tmp_path):
    res = runner.invoke(app, NO_VEC_MAP + ["--arch", str(_no_vector_unit(tmp_path))], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "declares no vector unit ([vector])" in res.output
    assert "the accelerator's [precision]" in res.output
