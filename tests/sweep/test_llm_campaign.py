"""The seven zoo transformers in a campaign: each step expands, runs (local executor), and its
report row equals `sweep map --network` of the same step on the same accelerator with the same
deterministic mapper (two paths, one answer); the bundled LLM campaign validates."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sweep import api
from sweep.kinds.load import load_campaign

ROOT = Path(__file__).resolve().parents[2]

#: One small step per model (short sequences keep the ordering spaces small).
STEPS = [
    '{ model = "bert_base", seq = 16 }',
    '{ model = "gpt2", phase = "decode", context = 16 }',
    '{ model = "llama3_2_1b", phase = "decode", context = 16 }',
    '{ model = "llama3_8b", phase = ["decode"], batch = [1, 2], context = 16 }',
    '{ model = "llama3_70b", phase = "decode", context = 16 }',
    '{ model = "mixtral_8x7b", phase = "decode", batch = 3, context = 16 }',
    '{ model = "vit_b16" }',
]


def _campaign(tmp_path: Path) -> Path:
    p = tmp_path / "llm.toml"
    p.write_text(f'name = "llm"\noutput = "{(tmp_path / "out").as_posix()}"\nnetworks = [{", ".join(STEPS)}]\n'
                 '[architectures]\nkind = "loopnest"\npresets = ["tpu_like"]\n'
                 '[[mappers]]\nname = "loma"\nparams = { lpf_limit = 4 }\n')
    return p


def test_seven_models_expand_to_named_steps(tmp_path):
    c = load_campaign(_campaign(tmp_path))
    assert [n.name for n in c.networks] == [
        "bert_base/prefill/b1/seq16", "gpt2/decode/b1/ctx16", "llama3_2_1b/decode/b1/ctx16",
        "llama3_8b/decode/b1/ctx16", "llama3_8b/decode/b2/ctx16", "llama3_70b/decode/b1/ctx16",
        "mixtral_8x7b/decode/b3/ctx16", "vit_b16/prefill/b1/seq197"]


@pytest.mark.slow
def test_seven_models_run_and_report_what_sweep_map_gives(tmp_path):
    run = api.run_campaign(_campaign(tmp_path), executor="local")
    assert run.summary.tasks_failed == 0
    steps = api.load_results(run.output).steps
    assert len(steps) == 8
    assert set(steps["phase"]) == {"prefill", "decode"}
    assert steps.set_index("network").loc["mixtral_8x7b/decode/b3/ctx16", "batch"] == 3
    for _, r in steps.iterrows():
        assert r["missing_layers"] == 0 and math.isfinite(r["tokens_per_s"]), r["network"]
    # the same step through `sweep map --network` (in-process): identical energy and latency
    for name, kw in (("llama3_8b/decode/b2/ctx16", {"phase": "decode", "batch": 2, "context": 16}),
                     ("vit_b16/prefill/b1/seq197", {})):
        net = api.load_network(name.split("/")[0], **kw)
        one = api.map_network(net, "tpu_like", "loma", "energy", params={"lpf_limit": 4})
        row = steps.set_index("network").loc[name]
        assert row["energy_pj"] == pytest.approx(one.energy_pj, rel=1e-12)
        assert row["latency_cycles"] == pytest.approx(one.latency_cycles, rel=1e-12)
        llm = one.llm
        per = llm["ttft_s"] if kw.get("phase", "prefill") == "prefill" else llm["time_per_token_s"]
        assert per == pytest.approx(row["ttft_s"] if row["phase"] == "prefill" else row["time_per_token_s"])
        # seconds at tpu_like's 700 MHz clock (its TOML): cycles / 7e8
        assert per == pytest.approx(one.latency_cycles / 700e6)
        # DRAM traffic rebuilt from the stored best orderings = sweep map's, role by role
        dram = one.total["dram_bits"]
        assert row["dram_bits"] == pytest.approx(sum(dram.values()))
        assert row["dram_weights_share"] == pytest.approx(dram["weights"] / sum(dram.values()))
        assert row["dram_kv_cache_share"] == pytest.approx(dram["kv_cache"] / sum(dram.values()))


def test_bundled_llm_campaign_validates():
    c = load_campaign(ROOT / "campaigns" / "llm_serving.toml")
    assert len(c.networks) == 7  # 3 batches x 2 contexts of decode + 1 prefill
    assert {n.workload["phase"] for n in c.networks} == {"decode", "prefill"}
