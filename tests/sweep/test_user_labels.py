"""What a new user reads when a name is wrong (issue 43, item 8): an unknown network with step
options gets the closest names, not "not a transformer model"; a campaign's network table
without ``model`` or ``file`` says what it may hold."""

from __future__ import annotations

from typer.testing import CliRunner

from sweep.cli import app


def test_a_misspelt_transformer_with_step_options_gets_the_closest_names():
    r = CliRunner().invoke(app, ["map", "--network", "llama4_8b", "--phase", "decode", "--arch", "llm_ws",
                                 "--mapper", "loma"])
    assert r.exit_code == 2
    assert "--network = 'llama4_8b': unknown network (closest: llama3_8b" in r.output
    assert "not a transformer model" not in r.output


def test_a_known_cnn_with_step_options_still_says_they_do_not_apply():
    r = CliRunner().invoke(app, ["map", "--network", "resnet18", "--phase", "decode", "--arch", "llm_ws",
                                 "--mapper", "loma"])
    assert r.exit_code == 2 and "--phase = 'decode'" in r.output


def test_a_network_table_without_model_names_model(tmp_path):
    camp = tmp_path / "c.toml"
    camp.write_text('name = "x"\noutput = "out"\nnetworks = [{ phase = "decode", batch = 1 }]\n'
                    'objectives = ["latency"]\n[architectures]\nkind = "loopnest"\npresets = ["llm_ws"]\n'
                    '[[mappers]]\nname = "loma"\n')
    r = CliRunner().invoke(app, ["validate", str(camp)])
    assert r.exit_code == 2
    assert 'networks[0]' in r.output and '{model = "llama3_8b", phase = "decode", ...}' in r.output


def test_validate_lists_every_network_and_says_which_the_serving_mix_adds():
    from paths import REPO
    r = CliRunner().invoke(app, ["validate", str(REPO / "campaigns" / "llm_llama3_8b.toml")])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("networks ("))
    written, mix = line.split("; the serving mix's steps: ")
    # the campaign's steps are W8A8 (weight_bits = act_bits = 8: a "/w8/a8" tag) with attention fused
    # (fusion = "fused": no fusion tag, only an unfused step's name ends in "/unfused")
    assert written.strip().startswith("networks (8): llama3_8b/prefill/b1/seq2048/w8/a8")
    assert len(written.split(", ")) == 4 and len(mix.split(", ")) == 4
    assert "llama3_8b/prefill/b16/seq2048/w8/a8" in mix and "llama3_8b/decode/b16/ctx2304/w8/a8" in mix


def test_list_archs_name_shows_one_accelerator_by_hand():
    # llm_ws (costmodel/presets/llm_ws.toml): 128 x 128 PEs at 1 GHz; 16 MiB unified buffer with a
    # 1,024-bit shared port; one HBM2E stack: 409.6 GB/s (3.2 Gb/s x 1,024 pins), 16 GiB
    import json
    r = CliRunner().invoke(app, ["list", "archs", "llm_ws", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert (d["pes"], d["clock_mhz"], d["peak_macs_per_s"]) == (16384, 1000.0, 16384 * 1e9)
    ub = next(m for m in d["memories"] if m["name"] == "unified_buffer")
    assert ub["size_bits"] == 16 * 2**20 * 8 and ub["read_gbs"] == 1024 * 1e9 / 8 / 1e9 and ub["shared_port"]
    assert d["dram"]["kind"] == "hbm2e" and abs(d["dram"]["gbs"] - 409.6) < 1e-9
    assert d["dram"]["capacity_bytes"] == 16 * 2**30 and d["vector_lanes"] == 128
    text = CliRunner().invoke(app, ["list", "archs", "llm_ws"]).output
    assert "16,384 PEs at 1000 MHz, peak 16.4 TMAC/s" in text and "1 x hbm2e, 409.6 GB/s" in text


def test_a_layer_row_names_the_layers_of_its_shape_it_stands_for():
    # Llama-3-8B's q_proj and o_proj are both 4,096 x 4,096: mapped once, repeats 2 x 32 at decode
    # (W8A8: the bfloat16 checkpoint's 16.1 GB of weights do not fit llm_ws's 16 GiB x 0.9)
    import json
    w8a8 = ["--weight-bits", "8", "--act-bits", "8"]
    r = CliRunner().invoke(app, ["map", "--network", "llama3_8b", "--phase", "decode", "--arch", "llm_ws",
                                 "--mapper", "loma", "--param", "lpf_limit=4", *w8a8])
    assert r.exit_code == 0, r.output
    assert "q_proj (+ o_proj)" in r.output and "k_proj (+ v_proj)" in r.output
    assert "ffn_gate (+ ffn_up)" in r.output and "(+ names) lists the others" in r.output
    js = json.loads(CliRunner().invoke(app, ["map", "--network", "llama3_8b", "--phase", "decode", "--arch",
                                             "llm_ws", "--mapper", "loma", "--param", "lpf_limit=4", *w8a8,
                                             "--json"]).output)
    rows = {x["layer"]: x for x in js["layers"]}
    assert rows["q_proj"]["merged"] == ["o_proj"] and rows["q_proj"]["repeat"] == 64
    assert rows["ffn_down"]["merged"] == [] and rows["ffn_down"]["repeat"] == 32


def test_an_interrupted_resume_counts_the_tasks_stored_before_it_too(tmp_path, monkeypatch):
    # issue 43, item 7: "interrupted: 28 task(s) stored" when the bar said 75 (47 stored by an
    # earlier run, resumed)
    import sweep.engine.runner as runner
    from paths import REPO

    def stop(*a, **k):
        raise runner.Interrupted(runner.RunSummary(output=str(tmp_path), tasks_total=100, tasks_before=47,
                                                   tasks_skipped=47, tasks_run=28))
    monkeypatch.setattr(runner, "run_campaign", stop)
    r = CliRunner().invoke(app, ["run", str(REPO / "campaigns" / "salsa_eyeriss.toml"), "--out", str(tmp_path / "o"),
                                 "--resume"])
    assert r.exit_code == 130
    assert "interrupted: 28 task(s) stored by this run, 75 of 100 in all, in" in r.output


def _mix_campaign(tmp_path, workload: str):
    camp = tmp_path / "mix.toml"
    camp.write_text('name = "x"\noutput = "out"\nnetworks = [{ model = "llama3_2_1b", phase = "decode", context = 64 }]\n'
                    f'[workload]\nmodel = "llama3_2_1b"\nprompt = 64\n{workload}\n'
                    '[architectures]\nkind = "loopnest"\npresets = ["llm_ws"]\n[[mappers]]\nname = "loma"\n')
    return camp


def test_the_serving_mix_names_its_generated_tokens_output_tokens(tmp_path):
    """Issue 43, item 8: the top-level ``output`` (the result directory) and ``[workload] output``
    (tokens) shared a name; ``output_tokens`` is the key, ``output`` still read, not both."""
    from sweep.kinds.load import load_campaign
    new = load_campaign(_mix_campaign(tmp_path, "output_tokens = 16"))
    old = load_campaign(_mix_campaign(tmp_path, "output = 16"))
    assert new.workload.output == old.workload.output == 16
    assert new.config_hash() == old.config_hash()  # the same campaign: its results and task ids
    r = CliRunner().invoke(app, ["validate", str(_mix_campaign(tmp_path, "output = 16\noutput_tokens = 16"))])
    assert r.exit_code == 2 and "workload.output" in r.output and "output_tokens" in r.output
    r = CliRunner().invoke(app, ["validate", str(_mix_campaign(tmp_path, "output_tokens = -3"))])
    assert r.exit_code == 2 and "workload.output_tokens = -3" in " ".join(r.output.split())


def test_an_area_says_which_technology_it_comes_from():
    """Issue 43, item 6: tpu_v1's 1,445 mm^2 is the 65 nm tables' (the chip is 28 nm, under 331 mm^2
    with I/O); `sweep list archs` says so and gives the same silicon under CACTI 22 nm (about 76 mm^2:
    array and SRAM only)."""
    import json
    r = CliRunner().invoke(app, ["list", "archs", "tpu_v1", "--json"])
    doc = json.loads(r.output)
    assert doc["tech"] is None and 1400 < doc["area_mm2"] < 1500 and 60 < doc["area_cacti22_mm2"] < 90
    text = " ".join(CliRunner().invoke(app, ["list", "archs", "tpu_v1"]).output.split())
    assert "the 65 nm tables" in text and 'with tech = "cacti22"' in text
    llm = json.loads(CliRunner().invoke(app, ["list", "archs", "llm_ws", "--json"]).output)
    assert llm["tech"] == "cacti22" and llm["area_cacti22_mm2"] is None
