"""Memory that can run out (`costmodel.capacity`): a step's DRAM footprint counted by hand from the
models' published configs, the capacity of the accelerator's DRAM, the largest batch that fits, and
the refusal before any mapping (`sweep map` exits 1, an architecture search's design is infeasible
for that step, a loop-nest campaign does not map it)."""

from __future__ import annotations

import pytest

from costmodel.capacity import max_batch, step_footprint
from costmodel.loopnest.arch import load_accelerator
from costmodel.transformer import build_transformer

GIB = 2**30


@pytest.fixture(scope="module")
def llm_ws():
    return load_accelerator("llm_ws")   # one HBM2E stack, 8-bit weights and activations


def test_llama3_70b_decode_by_hand(llm_ws):
    """Llama-3-70B (80 blocks, hidden 8192, 8 KV heads x 128, 70,553,706,496 parameters), decode at
    batch 64, context 8,192, 8-bit weights and cache: weights 70,553,706,496 B; KV cache
    64 x 8192 x 80 x 2 x 1024 x 1 B = 85,899,345,920 B; the largest live operation is the LM head
    (64 x 8192 inputs + 64 x 128,256 outputs, 8 bits) on top of the residual stream 64 x 8192."""
    fp = step_footprint(build_transformer("llama3_70b", phase="decode", batch=64, context=8192), llm_ws)
    assert fp.weights_bytes == 70_553_706_496
    assert fp.kv_cache_bytes == 64 * 8192 * 80 * 2 * 1024
    assert fp.largest == "lm_head"
    assert fp.activations_bytes == 64 * 8192 + (64 * 8192 + 64 * 128_256)
    assert fp.capacity_bytes == 16 * GIB and not fp.fits
    r = fp.reason()
    assert "needs 156.5 GB" in r and "weights 70.6 GB" in r and "KV cache 85.9 GB" in r
    assert "llm_ws has 17.2 GB (16 GiB) in 1 HBM2E stack" in r
    assert max_batch(build_transformer("llama3_70b", phase="decode", batch=64, context=8192), llm_ws) == 0


def test_largest_batch_that_fits_by_hand(llm_ws):
    """Llama-3-8B decode at context 4,096 on one 16 GiB stack: weights 8,030,261,248 B; per sequence
    a KV cache of 4096 x 32 x 2 x 1024 B = 268,435,456 B; (16 GiB - weights) / that = 34.09, and the
    few kB of live activations leave 34."""
    net = build_transformer("llama3_8b", phase="decode", batch=1, context=4096)
    free = 16 * GIB - 8_030_261_248
    assert free // (4096 * 32 * 2 * 1024) == 34
    assert max_batch(net, llm_ws) == 34
    assert step_footprint(build_transformer("llama3_8b", phase="decode", batch=34, context=4096), llm_ws).fits
    assert not step_footprint(build_transformer("llama3_8b", phase="decode", batch=35, context=4096), llm_ws).fits


def test_precisions_and_units_change_the_footprint(llm_ws):
    """16-bit weights double the weights' bytes; a 4-bit cache halves the KV cache (8-bit
    activations); 4 HBM2E stacks hold 64 GiB."""
    base = step_footprint(build_transformer("llama3_8b", phase="decode", batch=8, context=4096), llm_ws)
    w16 = step_footprint(build_transformer("llama3_8b", phase="decode", batch=8, context=4096, weight_bits=16), llm_ws)
    kv4 = step_footprint(build_transformer("llama3_8b", phase="decode", batch=8, context=4096, kv_bits=4), llm_ws)
    assert w16.weights_bytes == 2 * base.weights_bytes
    assert kv4.kv_cache_bytes * 2 == base.kv_cache_bytes
    from costmodel.loopnest.template import ArchTemplate
    big = ArchTemplate(llm_ws).design({"dram_units": 4})
    assert step_footprint(build_transformer("llama3_8b"), big).capacity_bytes == 64 * GIB


def test_mixtral_counts_every_expert_and_no_capacity_means_unchecked():
    """An MoE holds all its experts (Mixtral 8x7B: 46,702,792,704 parameters, at 8 bits), however
    few a step touches; tpu_like's DRAM is a plain level: no capacity, not checked."""
    tpu = load_accelerator("tpu_like")
    fp = step_footprint(build_transformer("mixtral_8x7b", phase="decode", batch=1, context=512), tpu)
    assert fp.weights_bytes == 46_702_792_704
    assert fp.capacity_bytes is None and fp.fits and "not checked" in fp.reason()
    assert max_batch(build_transformer("mixtral_8x7b"), tpu) is None


# ----------------------------------------------------------------------------- refused before mapping

def test_sweep_map_refuses_a_step_that_does_not_fit_before_mapping():
    """Exit 1 with the numbers, in well under the minutes a 70B step takes to map (no layer is
    mapped: the message comes before the progress bar's first layer)."""
    from typer.testing import CliRunner
    from sweep.cli import app
    res = CliRunner().invoke(app, ["map", "--network", "llama3_70b", "--phase", "decode", "--batch", "64",
                                   "--context", "8192", "--arch", "llm_ws", "--mapper", "salsa"])
    assert res.exit_code == 1
    out = " ".join(res.output.split())
    assert "does not fit llm_ws: needs 156.5 GB: weights 70.6 GB, KV cache 85.9 GB" in out
    assert "not even batch 1 fits" in out


def test_api_map_network_reports_memory_and_max_batch(llm_ws):
    """A step that fits carries its footprint and the largest batch beside the serving figures
    (GPT-2, 124,439,808 parameters at 8 bits; decode at context 64: 12 x 2 x 768 x 64 B of cache
    per sequence)."""
    from sweep import api
    from sweep.common.errors import DoesNotFitError
    net = build_transformer("gpt2", phase="decode", batch=1, context=64)
    res = api.map_network(net, llm_ws, "loma", params={"lpf_limit": 4})
    mem = res.llm["memory"]
    assert mem["weights_bytes"] == 124_439_808 and mem["kv_cache_bytes"] == 12 * 2 * 768 * 64
    per_seq = 12 * 2 * 768 * 64
    assert res.llm["max_batch"] <= (16 * GIB - 124_439_808) // per_seq
    with pytest.raises(DoesNotFitError, match="does not fit"):
        api.map_network(build_transformer("llama3_70b"), llm_ws, "loma")


def test_archsearch_design_too_small_is_infeasible_without_mapping(llm_ws):
    """Llama-3.2-1B at 16-bit weights (2.47 GB) on one LPDDR5 channel (2 GiB): the design's step is
    infeasible with the reason, and no layer is mapped: its one row (layer_index -1, no figures, no
    evaluations) says the same."""
    from costmodel.loopnest.template import ArchTemplate
    from sweep.engine.design_tasks import evaluate_design
    net = build_transformer("llama3_2_1b", phase="decode", batch=1, context=64, weight_bits=16)
    rows, totals, arch = evaluate_design(ArchTemplate(llm_ws), "d0", {"dram": "lpddr5", "dram_units": 1}, [net],
                                         "loma", {"lpf_limit": 4}, "latency", 0)
    (r,) = rows
    assert r["layer_index"] == -1 and r["status"] == "infeasible" and r["evaluations"] == 0 and len(arch) == 1
    (t,) = totals
    assert r["error"] == t["error"]
    assert t["status"] == "infeasible" and t["error"].startswith("does not fit: needs 2.4")
    assert "2.15 GB (2 GiB) in 1 LPDDR5 x16 channel" in t["error"]


def test_loopnest_campaign_does_not_map_a_step_that_does_not_fit(tmp_path):
    """A campaign of GPT-2 and Llama-3-70B decode steps on llm_ws: `sweep validate` names the 70B
    step and its numbers; only GPT-2's problems are expanded."""
    from typer.testing import CliRunner
    from sweep.cli import app
    from sweep.kinds.load import load_campaign
    from sweep.engine.layer_tasks import _problems, unfit_steps
    from sweep.kinds.loopnest import LoopnestKind
    p = tmp_path / "c.toml"
    p.write_text(f'''name = "fit"
output = "{(tmp_path / 'out').as_posix()}"
networks = [{{model = "gpt2", phase = "decode", context = 64}}, {{model = "llama3_70b", phase = "decode", context = 64}}]
objectives = ["latency"]
[architectures]
kind = "loopnest"
presets = ["llm_ws"]
[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
''')
    res = CliRunner().invoke(app, ["validate", str(p)])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "1 step(s) do not fit" in out and "llama3_70b/decode/b1/ctx64 on llm_ws: needs 70.6 GB" in out
    c = load_campaign(p)
    assert [u[:2] for u in unfit_steps(c)] == [("llama3_70b/decode/b1/ctx64", "llm_ws")]
    problems, aliases = _problems(c, LoopnestKind.rules)
    assert {a[0] for al in aliases.values() for a in al} == {"gpt2/decode/b1/ctx64"}
    assert not (tmp_path / "out").exists()


def test_a_design_too_small_for_one_step_has_no_figure_for_that_phase():
    """Decode at batch 1 fits, at batch 64 it does not: the design's decode figure is not the batch-1
    step alone (which would rank it above designs that serve both)."""
    import pandas as pd
    from sweep.reports.llm import design_figures
    t = pd.DataFrame([
        {"design_id": "a", "status": "ok", "phase": "decode", "area_mm2": 10.0, "ttft_s": None,
         "time_per_token_s": 0.01, "tokens_per_s": 100.0, "energy_per_token_j": 0.1},
        {"design_id": "a", "status": "infeasible", "phase": "decode", "area_mm2": 10.0, "ttft_s": None,
         "time_per_token_s": None, "tokens_per_s": None, "energy_per_token_j": None},
        {"design_id": "a", "status": "ok", "phase": "prefill", "area_mm2": 10.0, "ttft_s": 0.5,
         "time_per_token_s": None, "tokens_per_s": 4000.0, "energy_per_token_j": 0.01},
        {"design_id": "b", "status": "ok", "phase": "decode", "area_mm2": 20.0, "ttft_s": None,
         "time_per_token_s": 0.02, "tokens_per_s": 50.0, "energy_per_token_j": 0.2}])
    f = design_figures(t, []).set_index("design_id")
    assert f.loc["a", "time_per_token_s"] is None or pd.isna(f.loc["a", "time_per_token_s"])
    assert f.loc["a", "ttft_s"] == pytest.approx(0.5)
    assert f.loc["b", "time_per_token_s"] == pytest.approx(0.02)


def test_a_fused_serving_mix_names_its_fused_steps():
    """`[workload] fusion = "fused"`: the mix maps fused steps and finds them by name."""
    from costmodel.llm import ServingMix
    from sweep.config.networks import mix_networks
    mix = ServingMix("gpt2", 32, 16, 2, fusion="fused")
    nets = mix_networks(mix, lambda *a: pytest.fail(str(a)))
    assert [n.name for n in nets] == mix.step_names()
    assert mix.step_names()[0] == "gpt2/prefill/b2/seq32/fused" and mix.name.endswith("/fused")
    assert "fusion" not in ServingMix("gpt2", 32, 16).to_dict()   # unfused mixes hash as before
    with pytest.raises(ValueError, match="workload.fusion = 'auto'"):
        ServingMix("gpt2", 32, 16, fusion="auto")


def test_design_totals_carry_the_largest_batch_as_sweep_map_does(llm_ws):
    from costmodel.capacity import max_batch as mb
    from costmodel.loopnest.template import ArchTemplate
    from sweep.engine.design_tasks import evaluate_design
    net = build_transformer("gpt2", phase="decode", batch=1, context=64)
    design = ArchTemplate(llm_ws).design({"dram": "lpddr5", "dram_units": 1})
    _, totals, _ = evaluate_design(ArchTemplate(llm_ws), "d1", {"dram": "lpddr5", "dram_units": 1}, [net],
                                   "loma", {"lpf_limit": 4}, "latency", 0)
    # 2 GiB: (2 GiB - 124,439,808 B of weights) / (12 x 2 x 768 x 64 B of cache per sequence), less
    # the live activations
    assert totals[0]["max_batch"] == mb(net, design) <= (2 * GIB - 124_439_808) // (12 * 2 * 768 * 64)


def test_archsearch_report_says_why_a_design_is_infeasible(tmp_path):
    """A grid over the DRAM kind with a step too large for one LPDDR5 channel: the report names
    the step, how many designs, and the numbers."""
    from typer.testing import CliRunner
    from sweep.cli import app
    p = tmp_path / "as.toml"
    p.write_text(f'''name = "as_fit"
output = "{(tmp_path / 'out').as_posix()}"
networks = [{{model = "llama3_2_1b", phase = "decode", context = 64, weight_bits = 16, fusion = "fused"}}]
objectives = ["latency"]
[architectures]
kind = "loopnest"
template = "llm_ws"
[architectures.grid]
dram = ["lpddr5", "hbm2e"]
dram_units = [1]
[search]
sampler = "grid"
objectives = ["time_per_token_s"]
[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
''')
    r = CliRunner()
    assert r.invoke(app, ["run", str(p), "--executor", "local"]).exit_code == 0
    res = r.invoke(app, ["report", str(tmp_path / "out")])
    out = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "1 ok, 1 infeasible" in out
    assert "infeasible: llama3_2_1b/decode/b1/ctx64/w16/fused: 1 design(s)" in out
    assert "does not fit: needs 2.47 GB" in out and "in 1 LPDDR5 x16 channel" in out
