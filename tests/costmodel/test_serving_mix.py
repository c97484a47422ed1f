"""The serving mix (`costmodel.llm.ServingMix`): its decode contexts, the trapezoid weights (exact
for a cost linear in the context) and a request's figures, worked by hand."""

from __future__ import annotations

import pytest

from costmodel.llm import ServingMix


def test_contexts_and_weights_integrate_a_linear_cost_exactly():
    m = ServingMix("llama3_8b", prompt=2048, output=256, batch=16, points=3)
    assert m.contexts() == [2049, 2177, 2304]  # prompt + 1, the midpoint (2176.5 rounded half up), prompt + output
    w = m.decode_weights()
    assert sum(w) == pytest.approx(256)
    # a cost linear in the context, f(c) = 3 + 2c: the sum over c = 2049..2304 by hand is
    # 256 x 3 + 2 x (2049 + 2304) x 256 / 2 = 768 + 1,114,368 = 1,115,136
    assert sum(wi * (3 + 2 * c) for wi, c in zip(w, m.contexts())) == pytest.approx(1_115_136)
    # two points, four decode tokens at contexts 11..14: f(c) = c sums to 50
    m2 = ServingMix("gpt2", prompt=10, output=4, points=2)
    assert m2.contexts() == [11, 14]
    assert sum(wi * c for wi, c in zip(m2.decode_weights(), m2.contexts())) == pytest.approx(50)


def test_request_figures_by_hand():
    m = ServingMix("gpt2", prompt=10, output=4, batch=2, points=2)
    # prefill 1e6 cycles and 5e9 pJ; decode steps 1e5 cycles + 1e3 per context token, 1e8 pJ each
    pre = {"energy_pj": 5e9, "latency_cycles": 1e6}
    dec = [{"energy_pj": 1e8, "latency_cycles": 1e5 + 1e3 * c} for c in m.contexts()]
    f = m.figures(pre, dec, clock_mhz=1000.0)
    # decode cycles: 4 x 1e5 + 1e3 x (11 + 12 + 13 + 14) = 450,000; request 1,450,000 cycles = 1.45 ms
    assert f["latency_cycles"] == pytest.approx(1_450_000)
    assert f["request_latency_s"] == pytest.approx(1.45e-3)
    assert f["requests_per_s"] == pytest.approx(2 / 1.45e-3)
    assert f["tokens_per_s"] == pytest.approx(2 * 4 / 1.45e-3)
    # energy: 5e9 + 4 x 1e8 = 5.4e9 pJ per batch of 2 requests -> 2.7 mJ per request, 0.675 mJ per token
    assert f["energy_per_request_j"] == pytest.approx(2.7e-3)
    assert f["energy_per_token_j"] == pytest.approx(5.4e-3 / 8)
    assert f["ttft_s"] == pytest.approx(1e-3) and f["time_per_token_s"] == pytest.approx(450_000 / 4 / 1e9)
    assert m.figures({}, [], 1000.0)["request_latency_s"] is None


@pytest.mark.parametrize("kw, key", [({"prompt": 0}, "prompt"), ({"output": -1}, "output"),
                                     ({"batch": 1.5}, "batch"), ({"points": 1}, "points")])
def test_bad_values_name_the_key(kw, key):
    with pytest.raises(ValueError, match=f"workload.{key}"):
        ServingMix(**{"model": "gpt2", "prompt": 10, "output": 4, **kw})


def test_a_mix_is_of_a_decoder_bundled_or_read_from_a_file(tmp_path):
    """An encoder or a ViT has no decode step (`costmodel.transformer.step.resolve_step`), so no mix;
    a model read from a config.json is named by the file and identified by its shapes."""
    import shutil
    from pathlib import Path

    from costmodel.transformer import read_hf_config
    models = Path(__file__).resolve().parents[2] / "costmodel" / "transformer" / "models"
    for name in ("bert_base", "vit_b16"):
        with pytest.raises(ValueError, match=f"workload.model = '{name}'.*no decode step"):
            ServingMix(name, prompt=10, output=4)
        shutil.copy(models / f"{name}.json", tmp_path / f"{name}_copy.json")
        cfg = read_hf_config(tmp_path / f"{name}_copy.json")[0]
        with pytest.raises(ValueError, match="no decode step"):
            ServingMix(cfg.name, prompt=10, output=4, config=cfg)
    with pytest.raises(ValueError, match="workload.model = 'resnet50'"):
        ServingMix("resnet50", prompt=10, output=4)
    shutil.copy(models / "gpt2.json", tmp_path / "mine.json")
    cfg = read_hf_config(tmp_path / "mine.json")[0]
    m = ServingMix(cfg.name, prompt=10, output=4, config=cfg)
    assert m.name == "mine/mix/b1/p10/o4" and m.spec is cfg
    # GPT-2's shapes (Radford et al. 2019): 12 blocks of 768, 12 heads, FFN 3,072, 50,257 tokens
    d = m.to_dict()
    assert {k: d["config"][k] for k in ("layers", "hidden", "heads", "ffn", "vocab")} == \
        {"layers": 12, "hidden": 768, "heads": 12, "ffn": 3072, "vocab": 50257}
    assert "config" not in ServingMix("gpt2", prompt=10, output=4).to_dict()  # a bundled model: its name
