"""A transformer from its Hugging Face config.json through every door (issue 41): `sweep map
--network config.json`, `sweep list networks --file`, a campaign's ``{config = ...}`` networks, its
report, and the API; bad files exit 2 naming the file and the field, with nothing written.

Two small configs keep it fast: a Llama-style decoder and a DeepSeek-V3-style one (latent
attention, a dense first block, routed and shared experts)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep import api
from sweep.cli import app

TINY_LLAMA = {"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
              "max_position_embeddings": 2048, "hidden_act": "silu"}
TINY_DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 3,
                 "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 512,
                 "moe_intermediate_size": 64, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1,
                 "first_k_dense_replace": 1, "n_group": 2, "topk_group": 1, "q_lora_rank": 64, "kv_lora_rank": 32,
                 "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 1000,
                 "max_position_embeddings": 4096}


def _write(tmp_path: Path, data: dict, name: str) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def test_sweep_map_takes_a_config_json(tmp_path):
    """The unfused step (its score and context matmuls by name) through `sweep map` and the API: one answer."""
    cfg = _write(tmp_path, TINY_DEEPSEEK, "tiny_v3.json")
    r = CliRunner().invoke(app, ["map", "--arch", "llm_ws", "--mapper", "loma", "--network", str(cfg),
                                 "--phase", "decode", "--batch", "2", "--context", "64", "--fusion", "unfused",
                                 "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["network"] == "tiny_v3/decode/b2/ctx64/unfused"
    # the same step through the API: one answer
    net = api.load_network(str(cfg), phase="decode", batch=2, context=64, fusion="unfused")
    assert {"q_absorb", "kv_a_proj", "score", "context", "o_absorb", "ffn_gate", "router", "expert_gate",
            "shared_gate"} <= {l.name for l, _ in net}
    assert {row["layer"] for row in doc["layers"]} <= {l.name for l, _ in net}
    one = api.map_network(net, "llm_ws", "loma", "energy")
    assert doc["total"]["energy_pj"] == pytest.approx(one.energy_pj, rel=1e-12)
    assert net.workload["mla_form"] == "absorbed" and net.workload["config"]["kv_lora_rank"] == 32


def test_list_networks_file_shows_parameters_and_the_fields_read(tmp_path):
    cfg = _write(tmp_path, TINY_LLAMA, "tiny_llama.json")
    r = CliRunner().invoke(app, ["list", "networks", "--file", str(cfg), "--phase", "prefill", "--seq", "32", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # 2 blocks x (q 256x256 + k, v 256x128 + o 256x256 + MLP 3 x 256 x 512 + 2 norms) + embed + head + norm
    block = 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512 + 2 * 256
    assert doc["params"] == doc["activated_params"] == 2 * block + 2 * 1000 * 256 + 256
    assert doc["architecture"] == "LlamaForCausalLM" and doc["network"] == "tiny_llama/prefill/b1/seq32"
    assert "tie_word_embeddings" in doc["defaulted"] and doc["read"]["hidden_size"] == 256
    assert doc["kv_cache_values_per_token"] == 2 * 2 * 64 and doc["published_params"] is None
    text = CliRunner().invoke(app, ["list", "networks", "--file", str(cfg)])
    assert text.exit_code == 0 and "LlamaForCausalLM: " in text.output and "parameters: " in text.output


@pytest.mark.parametrize("data, field", [
    ({**TINY_LLAMA, "architectures": ["MambaForCausalLM"]}, "architectures[0] = 'MambaForCausalLM'"),
    ({k: v for k, v in TINY_LLAMA.items() if k != "num_hidden_layers"}, "num_hidden_layers = None"),
    ({**TINY_LLAMA, "intermediate_size": -1}, "intermediate_size = -1"),
    ({**TINY_LLAMA, "num_attention_heads": 3, "num_key_value_heads": 3}, "num_attention_heads = 3"),
])
def test_a_bad_config_exits_2_naming_the_file_and_field(tmp_path, data, field):
    cfg = _write(tmp_path, data, "bad.json")
    r = CliRunner().invoke(app, ["map", "--arch", "llm_ws", "--mapper", "loma", "--network", str(cfg)])
    assert r.exit_code == 2, r.output
    flat = " ".join(r.output.split())
    assert "bad.json" in flat and field in flat


def _campaign(tmp_path: Path, networks: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(f'name = "cfg"\noutput = "{(tmp_path / "out").as_posix()}"\nnetworks = [{networks}]\n'
                 '[architectures]\nkind = "loopnest"\npresets = ["llm_ws"]\n'
                 '[[mappers]]\nname = "loma"\nparams = { lpf_limit = 4 }\n')
    return p


def test_a_bad_config_in_a_campaign_writes_nothing(tmp_path):
    _write(tmp_path, {**TINY_LLAMA, "num_key_value_heads": 3}, "bad.json")
    camp = _campaign(tmp_path, '{ config = "bad.json", phase = "decode", context = 16 }')
    for cmd in (["validate", str(camp)], ["run", str(camp), "--executor", "local"]):
        r = CliRunner().invoke(app, cmd)
        assert r.exit_code == 2, r.output
        flat = " ".join(r.output.split())
        assert "networks[0].config" in flat and "num_key_value_heads = 3" in flat
    assert not (tmp_path / "out").exists()
    missing = _campaign(tmp_path, '{ config = "nowhere.json", phase = "decode" }')
    r = CliRunner().invoke(app, ["validate", str(missing)])
    assert r.exit_code == 2 and "no such file" in r.output


def test_a_campaign_of_config_steps_runs_and_reports(tmp_path):
    _write(tmp_path, TINY_LLAMA, "tiny_llama.json")
    _write(tmp_path, TINY_DEEPSEEK, "tiny_v3.json")
    camp = _campaign(tmp_path, '{ config = "tiny_llama.json", phase = "decode", batch = [1, 2], context = 32 }, '
                               '{ config = "tiny_v3.json", phase = ["prefill"], seq = 32 }')
    run = api.run_campaign(camp, executor="local")
    assert run.summary.tasks_failed == 0
    steps = api.load_results(run.output).steps.set_index("network")
    assert sorted(steps.index) == ["tiny_llama/decode/b1/ctx32", "tiny_llama/decode/b2/ctx32",
                                   "tiny_v3/prefill/b1/seq32"]
    for name, r in steps.iterrows():
        assert r["missing_layers"] == 0 and math.isfinite(r["tokens_per_s"]), name
    net = api.load_network(str(tmp_path / "tiny_v3.json"), phase="prefill", seq=32)
    one = api.map_network(net, "llm_ws", "loma", "energy", params={"lpf_limit": 4})
    assert steps.loc["tiny_v3/prefill/b1/seq32", "energy_pj"] == pytest.approx(one.energy_pj, rel=1e-12)
    r = CliRunner().invoke(app, ["report", str(run.output)])
    assert r.exit_code == 0 and "tiny_v3/prefill/b1/seq32" in r.output


def test_a_search_report_commands_a_config_step_with_its_file_and_options(tmp_path):
    """An architecture search's front designs come with the `sweep map` command of each network: a
    config.json's step is its file and the step's options, and the command maps that very step."""
    import shlex

    from sweep.reports.archsearch import map_command, network_arguments
    _write(tmp_path, TINY_LLAMA, "tiny_llama.json")
    name = "tiny_llama/decode/b2/ctx32/w8"
    manifest = {"campaign": {"networks": [{"config": "tiny_llama.json", "phase": "decode"}]},
                "config": {"networks": [{"name": name}]}, "base_dir": str(tmp_path)}
    args = network_arguments(manifest)[name]
    assert args == [str((tmp_path / "tiny_llama.json").resolve()), "--phase", "decode", "--batch", "2",
                    "--context", "32", "--weight-bits", "8"]
    cmd = shlex.split(map_command(args, "llm_ws", "loma", "energy", 0, {"lpf_limit": 4}))
    r = CliRunner().invoke(app, cmd[1:] + ["--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["network"] == name
