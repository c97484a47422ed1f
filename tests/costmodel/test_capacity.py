"""Memory that can run out (`costmodel.capacity`): a step's DRAM footprint counted by hand from the
models' published configs, the capacity of the accelerator's DRAM, the largest batch that fits, and
the refusal before any mapping (`sweep map` exits 1, an architecture search's design is infeasible
for that step, a loop-nest campaign does not map it)."""

from __future__ import annotations

import pytest

from costmodel.capacity import max_batch, step_footprint
from costmodel.loopnest.arch import load_accelerator
from costmodel.transformer import build_transformer, transformer_config

GIB = 2**30


def _at_accelerator(model: str):
    """Bundled ``model`` with its checkpoint's precision unstated: its steps take the accelerator's
    [precision] (8 bits on llm_ws and tpu_like), as the hand counts below assume where they give no
    bits (the bundled Llama 3 and Mixtral models are bfloat16 checkpoints, served at 16 bits)."""
    return transformer_config(model).at_accelerator_precision()


@pytest.fixture(scope="module")
def llm_ws():
    return load_accelerator("llm_ws")   # one HBM2E stack, 8-bit weights and activations


def test_llama3_70b_decode_by_hand(llm_ws):
    """Llama-3-70B (80 blocks, hidden 8192, 8 KV heads x 128, 70,553,706,496 parameters), decode at
    batch 64, context 8,192, 8-bit weights and cache: weights 70,553,706,496 B; KV cache
    64 x 8192 x 80 x 2 x 1024 x 1 B = 85,899,345,920 B; the largest live operation is the LM head
    (64 x 8192 inputs + 64 x 128,256 outputs, 8 bits) on top of the residual stream 64 x 8192."""
    step = build_transformer(_at_accelerator("llama3_70b"), phase="decode", batch=64, context=8192)
    fp = step_footprint(step, llm_ws)
    assert fp.weights_bytes == 70_553_706_496
    assert fp.kv_cache_bytes == 64 * 8192 * 80 * 2 * 1024
    assert fp.largest == "lm_head"
    assert fp.activations_bytes == 64 * 8192 + (64 * 8192 + 64 * 128_256)
    assert fp.capacity_bytes == 16 * GIB and not fp.fits
    r = fp.reason()
    assert "needs 156.5 GB" in r and "weights 70.6 GB" in r and "KV cache 85.9 GB" in r
    assert "llm_ws has 17.2 GB (16 GiB) in 1 HBM2E stack" in r
    # vLLM's default share, 0.9: floor(0.9 x 16 GiB) = 15,461,882,265 B (14.4 GiB)
    assert fp.gpu_memory_utilization == 0.9 and fp.usable_bytes == 15_461_882_265
    assert "x 0.90 usable (gpu_memory_utilization) = 15.5 GB (14.4 GiB)" in r
    assert max_batch(step, llm_ws) == 0


def test_largest_batch_that_fits_by_hand(llm_ws):
    """Llama-3-8B decode at context 4,096 on one 16 GiB stack: weights 8,030,261,248 B; per sequence
    a KV cache of 4096 x 32 x 2 x 1024 B = 268,435,456 B. Every byte (gpu_memory_utilization 1):
    (16 GiB - weights) / that = 34.09, and the few kB of live activations leave 34. vLLM's default
    0.9: (floor(0.9 x 16 GiB) - weights) / that = 27.69: 27."""
    net = build_transformer(_at_accelerator("llama3_8b"), phase="decode", batch=1, context=4096)
    per_seq = 4096 * 32 * 2 * 1024
    assert (16 * GIB - 8_030_261_248) // per_seq == 34
    assert (15_461_882_265 - 8_030_261_248) // per_seq == 27
    assert max_batch(net, llm_ws, gpu_memory_utilization=1.0) == 34
    assert max_batch(net, llm_ws) == 27
    at = lambda b: build_transformer(_at_accelerator("llama3_8b"), phase="decode", batch=b, context=4096)  # noqa: E731
    assert step_footprint(at(34), llm_ws, 1.0).fits and not step_footprint(at(35), llm_ws, 1.0).fits
    assert step_footprint(at(27), llm_ws).fits and not step_footprint(at(28), llm_ws).fits


def test_precisions_and_units_change_the_footprint(llm_ws):
    """On llm_ws's 8-bit [precision]: 16-bit weights double the weights' bytes; a 4-bit cache halves
    the KV cache (8-bit activations); 4 HBM2E stacks hold 64 GiB. The bundled model's default step
    (no bits given) takes its bfloat16 checkpoint's 16 bits: the weights of the 16-bit step and
    twice the 8-bit KV cache."""
    llama = _at_accelerator("llama3_8b")
    base = step_footprint(build_transformer(llama, phase="decode", batch=8, context=4096), llm_ws)
    w16 = step_footprint(build_transformer(llama, phase="decode", batch=8, context=4096, weight_bits=16), llm_ws)
    kv4 = step_footprint(build_transformer(llama, phase="decode", batch=8, context=4096, kv_bits=4), llm_ws)
    assert w16.weights_bytes == 2 * base.weights_bytes
    assert kv4.kv_cache_bytes * 2 == base.kv_cache_bytes
    assert base.kv_cache_bytes == 8 * 4096 * 32 * 2 * 1024    # 8 sequences x 4096 tokens x 32 blocks x K, V
    default = step_footprint(build_transformer("llama3_8b", phase="decode", batch=8, context=4096), llm_ws)
    assert default.weights_bytes == w16.weights_bytes == 2 * 8_030_261_248
    assert default.kv_cache_bytes == 2 * base.kv_cache_bytes
    from costmodel.loopnest.template import ArchTemplate
    big = ArchTemplate(llm_ws).design({"dram_units": 4})
    assert step_footprint(build_transformer("llama3_8b"), big).capacity_bytes == 64 * GIB


def test_mixtral_counts_every_expert_and_no_capacity_means_unchecked():
    """An MoE holds all its experts (Mixtral 8x7B: 46,702,792,704 parameters, at 8 bits), however
    few a step touches; tpu_like's DRAM is a plain level: no capacity, not checked."""
    tpu = load_accelerator("tpu_like")
    fp = step_footprint(build_transformer(_at_accelerator("mixtral_8x7b"), phase="decode", batch=1, context=512), tpu)
    assert fp.weights_bytes == 46_702_792_704
    assert fp.capacity_bytes is None and fp.fits and "not checked" in fp.reason()
    assert max_batch(build_transformer("mixtral_8x7b"), tpu) is None


# ----------------------------------------------------------------------------- refused before mapping

def test_sweep_map_refuses_a_step_that_does_not_fit_before_mapping():
    """Exit 1 with the numbers, in well under the minutes a 70B step takes to map (no layer is
    mapped: the message comes before the progress bar's first layer). 8-bit weights, activations
    and cache (``--weight-bits 8 --act-bits 8``), as counted by hand above."""
    from typer.testing import CliRunner
    from sweep.cli import app
    res = CliRunner().invoke(app, ["map", "--network", "llama3_70b", "--phase", "decode", "--batch", "64",
                                   "--context", "8192", "--weight-bits", "8", "--act-bits", "8",
                                   "--arch", "llm_ws", "--mapper", "salsa"])
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


GPT2_DECODE = '{model = "gpt2", phase = "decode", context = 64}'
LLAMA70B_DECODE = '{model = "llama3_70b", phase = "decode", context = 64, weight_bits = 8, act_bits = 8}'


def _llm_ws_campaign(tmp_path, networks: str):
    """A loop-nest campaign of the given networks (TOML inline tables) on llm_ws, LOMA at lpf_limit 4."""
    p = tmp_path / "c.toml"
    p.write_text(f'''name = "fit"
output = "{(tmp_path / 'out').as_posix()}"
networks = [{networks}]
objectives = ["latency"]
[architectures]
kind = "loopnest"
presets = ["llm_ws"]
[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
''')
    return p


def test_loopnest_campaign_does_not_map_a_step_that_does_not_fit(tmp_path):
    """A campaign of GPT-2 and Llama-3-70B decode steps on llm_ws: `sweep validate` names the 70B
    step (at 8-bit weights and activations: 70.6 GB of weights, as above) and its numbers; only
    GPT-2's problems are expanded."""
    from typer.testing import CliRunner
    from sweep.cli import app
    from sweep.kinds.load import load_campaign
    from sweep.engine.layer_tasks import _problems, unfit_steps
    from sweep.kinds.loopnest import LoopnestKind
    p = _llm_ws_campaign(tmp_path, GPT2_DECODE + ", " + LLAMA70B_DECODE)
    res = CliRunner().invoke(app, ["validate", str(p)])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "1 step(s) do not fit" in out and "llama3_70b/decode/b1/ctx64/w8/a8 on llm_ws: needs 70.6 GB" in out
    c = load_campaign(p)
    assert [u[:2] for u in unfit_steps(c)] == [("llama3_70b/decode/b1/ctx64/w8/a8", "llm_ws")]
    problems, aliases = _problems(c, LoopnestKind.rules)
    assert {a[0] for al in aliases.values() for a in al} == {"gpt2/decode/b1/ctx64"}
    assert not (tmp_path / "out").exists()


def test_a_campaign_where_no_step_fits_exits_2_naming_each_step(tmp_path):
    """Only the 70B step above, on llm_ws: nothing would be mapped, so `sweep validate` and `sweep
    run` refuse the campaign (exit 2) naming the step, the accelerator and the footprint; nothing
    written (issue 57: it ran nothing and exited 0)."""
    from typer.testing import CliRunner
    from sweep.cli import app
    p = _llm_ws_campaign(tmp_path, LLAMA70B_DECODE)
    for cmd in (["validate", str(p)], ["run", str(p), "--executor", "local"]):
        res = CliRunner().invoke(app, cmd)
        out = " ".join(res.output.split())
        assert res.exit_code == 2, (cmd, out)
        assert "networks" in out and "no step fits the usable DRAM of any accelerator" in out
        assert "llama3_70b/decode/b1/ctx64/w8/a8 on llm_ws: needs 70.6 GB" in out
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
    """Fused attention is the default (`[workload] fusion = "fused"` or unset): the mix maps fused
    steps, named without a tag as `build_transformer` names them, and finds them by name; an
    unfused mix's steps and name end in "/unfused", and only it states its fusion in its table."""
    from costmodel.llm import ServingMix
    from sweep.config.networks import mix_networks
    mix = ServingMix("gpt2", 32, 16, 2, fusion="fused")
    nets = mix_networks(mix, lambda *a: pytest.fail(str(a)))
    assert [n.name for n in nets] == mix.step_names()
    assert all(n.workload["fusion"] == "fused" for n in nets)
    assert mix.step_names()[0] == "gpt2/prefill/b2/seq32" and mix.name == "gpt2/mix/b2/p32/o16"
    assert ServingMix("gpt2", 32, 16, 2) == mix and "fusion" not in mix.to_dict()   # the default
    unfused = ServingMix("gpt2", 32, 16, 2, fusion="unfused")
    nets = mix_networks(unfused, lambda *a: pytest.fail(str(a)))
    assert [n.name for n in nets] == unfused.step_names()
    assert all(n.workload["fusion"] == "unfused" for n in nets)
    assert unfused.step_names()[0] == "gpt2/prefill/b2/seq32/unfused" and unfused.name.endswith("/unfused")
    assert unfused.to_dict()["fusion"] == "unfused"
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
    assert "rows: 1 ok, 1 does not fit (memory)" in out
    assert "not mapped, the step's weights, KV cache and activations exceed the design's DRAM" in out
    assert "1 llama3_2_1b/decode/b1/ctx64/w16;" in out   # fused: the default, not tagged in the name
    assert "e.g. needs 2.47 GB" in out and "in 1 LPDDR5 x16 channel" in out


# ----------------------------------------------------------------------------- the usable share

QWEN72 = "tests/data/hf/qwen2_5_72b.json"   # Qwen/Qwen2.5-72B's config.json (tests/data/hf/SOURCES.md)


def _qwen72_by_hand(share: float) -> tuple[int, int, int, int]:
    """Qwen2.5-72B decode at context 4,096, TP 4, 16-bit weights, activations and cache (the a100
    preset's [precision]), by hand from its config (hidden 8192, intermediate 29568, 80 blocks, 64
    heads and 8 K/V heads of 128, vocabulary 152,064, untied embeddings, Q/K/V biases).

    One chip's weights (Megatron-LM's split: heads, FFN and vocabulary / 4; the RMSNorm weights held
    by every chip): per block Q 8192 x 2048 + 2048, K and V 8192 x 256 + 256 each, O 2048 x 8192,
    gate / up / down 3 x 8192 x 7392, two norms 2 x 8192; the embedding rows and the LM head 2 x
    38,016 x 8192; the final norm 8192. KV cache per sequence: 2 x 80 blocks x 2 K/V heads x 128 x 2
    bytes x 4096 tokens. Activations per sequence: the residual stream (8192) and the largest
    operation's input and output, the LM head's share (8192 + 38,016), 2 bytes each.

    Returns (weights bytes, usable bytes, bytes per sequence, the largest batch).
    """
    block = 8192 * 2048 + 2048 + 2 * (8192 * 256 + 256) + 2048 * 8192 + 3 * 8192 * 7392 + 2 * 8192
    weights = 2 * (80 * block + 2 * 38_016 * 8192 + 8192)
    usable = int(85_899_345_920 * share)          # 80 GiB: five 16 GiB HBM2E stacks
    per_seq = 2 * 80 * 2 * 128 * 2 * 4096 + (8192 + 8192 + 38_016) * 2
    return weights, usable, per_seq, (usable - weights) // per_seq


def test_qwen2_5_72b_tp4_on_a100_by_hand():
    """The user's case: every byte gives 147 sequences, vLLM's 0.9 leaves 122 (= (77,309,411,328 -
    36,355,080,192) // 335,653,120; vLLM itself would also set aside its profiled activations of a
    max_num_batched_tokens pass and its non-torch memory, hence the user's "about 121")."""
    from costmodel.transformer import param_count, read_hf_config
    assert param_count(read_hf_config(QWEN72)[0])["total"] == 72_706_203_648   # the published count
    a100 = load_accelerator("a100")
    weights, usable, per_seq, best = _qwen72_by_hand(0.9)
    assert (weights, usable, per_seq, best) == (36_355_080_192, 77_309_411_328, 335_653_120, 122)
    assert _qwen72_by_hand(1.0)[3] == 147
    step = lambda b: build_transformer(QWEN72, phase="decode", batch=b, context=4096, tp=4,  # noqa: E731
                                       fusion="unfused")
    fp = step(best)
    assert fp.workload["tp"] == 4
    f = step_footprint(fp, a100)
    assert f.weights_bytes == weights and f.kv_cache_bytes == best * 2 * 80 * 2 * 128 * 2 * 4096
    assert f.largest == "lm_head" and f.activations_bytes == best * (8192 + 8192 + 38_016) * 2
    assert f.usable_bytes == usable and f.fits and not step_footprint(step(best + 1), a100).fits
    assert max_batch(step(1), a100) == 122
    assert max_batch(step(1), a100, gpu_memory_utilization=1.0) == 147


def _map(*args: str):
    from typer.testing import CliRunner
    from sweep.cli import app
    return CliRunner().invoke(app, ["map", "--network", QWEN72, "--phase", "decode", "--context", "4096", "--tp", "4",
                                    "--arch", "a100", "--mapper", "salsa", "--fusion", "unfused", *args])


@pytest.mark.parametrize("share, printed, best", [
    (None, "x 0.90 usable (gpu_memory_utilization) = 77.3 GB (72 GiB)", 122),
    ("1", "x 1.00 usable (gpu_memory_utilization) = 85.9 GB (80 GiB)", 147),
    ("0.95", "x 0.95 usable (gpu_memory_utilization) = 81.6 GB (76 GiB)", None),
])
def test_sweep_map_states_the_share_and_prints_the_hand_counted_batch(share, printed, best):
    """`sweep map` on a system of 4 chips: the text and --json say the share and the largest batch,
    which equals the hand count at that share."""
    import json
    opt = [] if share is None else ["--gpu-memory-utilization", share]
    best = _qwen72_by_hand(float(share or 0.9))[3] if best is None else best
    r = _map("--batch", "1", *opt)
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert f"memory per chip: 85.9 GB (80 GiB) in 5 HBM2E stacks {printed}; the step needs 36.7 GB" in out
    assert f"largest batch that fits at context 4,096: {best:,}" in out
    j = _map("--batch", "1", "--json", *opt)
    assert j.exit_code == 0, j.output
    llm = json.loads(j.stdout)["llm"]
    assert llm["max_batch"] == best and llm["memory"]["gpu_memory_utilization"] == float(share or 0.9)
    assert llm["memory"]["usable_bytes"] == _qwen72_by_hand(float(share or 0.9))[1]


def test_a_system_past_the_share_does_not_fit_and_fits_at_every_byte():
    """Batch 123 is one past the hand count at 0.9: refused before mapping (exit 1) with the largest
    batch that fits; with every byte counted it fits and is mapped."""
    r = _map("--batch", "123")
    assert r.exit_code == 1
    out = " ".join(r.output.split())
    assert "does not fit a100" in out and "x 0.90 usable (gpu_memory_utilization) = 77.3 GB" in out
    assert "the largest batch that fits is 122" in out
    assert _map("--batch", "123", "--gpu-memory-utilization", "1").exit_code == 0


@pytest.mark.parametrize("value", ["0", "-0.5", "1.5", "nan"])
def test_a_share_outside_0_1_exits_2_naming_the_option_and_value(value):
    r = _map("--batch", "1", "--gpu-memory-utilization", value)
    assert r.exit_code == 2
    out = " ".join(r.output.split())
    assert f"--gpu-memory-utilization = {float(value)}: expected a fraction in (0, 1]" in out


@pytest.mark.parametrize("value", [0, -0.1, 1.01, float("nan"), True, "0.9", None])
def test_the_model_refuses_a_share_outside_0_1_as_the_scheduler_does(llm_ws, value):
    """One rule and one message for the capacity model and the serving scheduler."""
    from costmodel.serving import SchedulerConfig
    net = build_transformer("gpt2", phase="decode", batch=1, context=64)
    with pytest.raises(ValueError, match=r"gpu_memory_utilization = .*: expected a fraction in \(0, 1\]") as a:
        step_footprint(net, llm_ws, value)
    with pytest.raises(ValueError) as b:
        SchedulerConfig(gpu_memory_utilization=value)
    assert str(a.value) == str(b.value)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        max_batch(net, llm_ws, gpu_memory_utilization=value)


def test_one_default_for_the_capacity_model_and_the_scheduler(llm_ws):
    """vLLM's 0.9 (CacheConfig.gpu_memory_utilization) is the default of both; the KV blocks the
    scheduler derives fill the same usable bytes the capacity check allows."""
    from costmodel.capacity import GPU_MEMORY_UTILIZATION
    from costmodel.serving import SchedulerConfig, kv_blocks
    assert GPU_MEMORY_UTILIZATION == 0.9 and SchedulerConfig().gpu_memory_utilization == GPU_MEMORY_UTILIZATION
    fp = step_footprint(build_transformer(_at_accelerator("llama3_8b"), phase="decode", batch=1, context=4096), llm_ws)
    kv = kv_blocks(fp.capacity_bytes, fp.weights_bytes, 0, 1, SchedulerConfig())
    assert kv["kv_bytes"] == pytest.approx(fp.usable_bytes - fp.weights_bytes, abs=1)


# ----------------------------------------------------------------------------- campaigns

def _loopnest_campaign(tmp_path, extra: str = "", more: str = "") -> str:
    p = tmp_path / "c.toml"
    p.write_text(f'''name = "share"
output = "{(tmp_path / 'out').as_posix()}"
networks = [
    {{model = "llama3_8b", phase = "decode", batch = 30, context = 4096, weight_bits = 8, act_bits = 8, fusion = "unfused"}},
    {more}
]
objectives = ["latency"]
[architectures]
kind = "loopnest"
presets = ["llm_ws"]
{extra}
[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
''')
    return str(p)


def test_loopnest_campaign_checks_its_steps_against_the_share(tmp_path):
    """Llama-3-8B decode at batch 30, context 4,096, 8-bit weights and activations (cache with
    them) on llm_ws (16 GiB): 30 > 27 sequences fit 0.9
    of it (by hand above), 30 <= 34 fit all of it. At the default the step is not mapped: alone in
    its campaign `sweep validate` refuses it (nothing to map, exit 2), beside a step that fits it
    says why; ``[architectures] gpu_memory_utilization = 1.0`` maps it."""
    from typer.testing import CliRunner
    from sweep.cli import app
    from sweep.engine.layer_tasks import _problems, unfit_steps
    from sweep.kinds.load import load_campaign
    from sweep.kinds.loopnest import LoopnestKind
    res = CliRunner().invoke(app, ["validate", _loopnest_campaign(tmp_path)])
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "no step fits" in out and "x 0.90 usable (gpu_memory_utilization) = 15.5 GB" in out
    gpt2 = '{model = "gpt2", phase = "decode", context = 64},'
    res = CliRunner().invoke(app, ["validate", _loopnest_campaign(tmp_path, more=gpt2)])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "1 step(s) do not fit" in out and "x 0.90 usable (gpu_memory_utilization) = 15.5 GB" in out
    c = load_campaign(_loopnest_campaign(tmp_path, more=gpt2))
    assert [u[:2] for u in unfit_steps(c)] == [("llama3_8b/decode/b30/ctx4096/w8/a8/unfused", "llm_ws")]
    assert {a[0] for al in _problems(c, LoopnestKind.rules)[1].values() for a in al} == {"gpt2/decode/b1/ctx64"}
    full = load_campaign(_loopnest_campaign(tmp_path, "gpu_memory_utilization = 1.0"))
    assert full.architectures.gpu_memory_utilization == 1.0 and unfit_steps(full) == []
    assert len(_problems(full, LoopnestKind.rules)[0]) > 0


ARCHSEARCH = '''name = "as_share"
output = "{out}"
networks = [
    {{model = "llama3_2_1b", phase = "decode", batch = 12, context = 4096, weight_bits = 8, act_bits = 8, fusion = "unfused"}},
]
objectives = ["latency"]
[architectures]
kind = "loopnest"
template = "llm_ws"
{extra}
[architectures.grid]
dram = ["lpddr5"]
dram_units = [1]
[search]
objectives = ["time_per_token_s"]
[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
'''


@pytest.mark.parametrize("kind, value", [("loopnest", "0"), ("loopnest", "1.5"), ("loopnest", '"0.9"'),
                                         ("archsearch", "-1"), ("archsearch", "2")])
def test_a_campaign_share_outside_0_1_exits_2_naming_the_key(tmp_path, kind, value):
    from typer.testing import CliRunner
    from sweep.cli import app
    if kind == "loopnest":
        path = _loopnest_campaign(tmp_path, f"gpu_memory_utilization = {value}")
    else:
        path = tmp_path / "as.toml"
        path.write_text(ARCHSEARCH.format(out=(tmp_path / "out").as_posix(), extra=f"gpu_memory_utilization = {value}"))
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert f"architectures.gpu_memory_utilization = {value.strip(chr(34))!s}" in out.replace("'", "")
    assert "expected a fraction in (0, 1]" in out and not (tmp_path / "out").exists()


def test_archsearch_design_past_the_share_is_infeasible_and_the_share_is_in_the_task_id(tmp_path, llm_ws):
    """Llama-3.2-1B (1,235,814,400 parameters, 8 bits) decode at batch 12, context 4,096 on one
    LPDDR5 channel (2 GiB): weights + 12 x 16 blocks x 2 x 8 K/V heads x 64 x 4096 B of cache =
    2,041,120,768 B and a few hundred kB of activations: under 2 GiB, over floor(0.9 x 2 GiB) =
    1,932,735,283 B. At 0.9 the design's step is infeasible before any mapping; the share is part of
    the task id."""
    from costmodel.loopnest.template import ArchTemplate
    from sweep.engine.design_tasks import design_tasks, evaluate_design
    from sweep.kinds.load import load_campaign
    net = build_transformer(_at_accelerator("llama3_2_1b"), phase="decode", batch=12, context=4096, fusion="unfused")
    design = ArchTemplate(llm_ws).design({"dram": "lpddr5", "dram_units": 1})
    need = 1_235_814_400 + 12 * 16 * 2 * 8 * 64 * 4096
    fp = step_footprint(net, design, 1.0)
    assert fp.weights_bytes + fp.kv_cache_bytes == need and fp.fits
    assert not step_footprint(net, design).fits and fp.total_bytes > int(2 * GIB * 0.9)
    rows, totals, _ = evaluate_design(ArchTemplate(llm_ws), "d0", {"dram": "lpddr5", "dram_units": 1}, [net],
                                      "loma", {"lpf_limit": 4}, "latency", 0)
    assert totals[0]["status"] == "infeasible" and rows[0]["evaluations"] == 0
    assert "x 0.90 usable (gpu_memory_utilization) = 1.93 GB" in totals[0]["error"]
    ids = {}
    for extra in ("", "gpu_memory_utilization = 0.9", "gpu_memory_utilization = 1.0"):
        p = tmp_path / f"as{len(ids)}.toml"
        p.write_text(ARCHSEARCH.format(out=(tmp_path / "out").as_posix(), extra=extra))
        (task,) = design_tasks(load_campaign(p))
        ids[extra] = (task.task_id, task.gpu_memory_utilization)
    assert ids[""][1] == ids["gpu_memory_utilization = 0.9"][1] == 0.9
    assert ids[""][0] == ids["gpu_memory_utilization = 0.9"][0]
    assert ids["gpu_memory_utilization = 1.0"] [1] == 1.0 and ids["gpu_memory_utilization = 1.0"][0] != ids[""][0]


def test_api_takes_the_share_and_refuses_a_bad_one(llm_ws):
    """GPT-2 decode at context 64 on llm_ws at half its 16 GiB: per sequence 12 x 2 x 768 x 64 B of
    cache and the residual stream plus the LM head's input and output (768 + 768 + 50,257 B at 8
    bits); (8 GiB - 124,439,808 B of weights) // 1,231,441 = 6,874."""
    from sweep import api
    from sweep.common.errors import CampaignError
    net = build_transformer("gpt2", phase="decode", batch=1, context=64, fusion="unfused")
    res = api.map_network(net, llm_ws, "loma", params={"lpf_limit": 4}, gpu_memory_utilization=0.5)
    assert res.llm["memory"]["gpu_memory_utilization"] == 0.5 and res.llm["memory"]["usable_bytes"] == 8 * GIB
    assert res.llm["max_batch"] == (8 * GIB - 124_439_808) // (12 * 2 * 768 * 64 + 768 + 768 + 50_257) == 6_874
    with pytest.raises(CampaignError, match=r"gpu_memory_utilization = 1\.5: expected a fraction in \(0, 1\]"):
        api.map_step("gpt2", llm_ws, "loma", params={"lpf_limit": 4}, gpu_memory_utilization=1.5)
