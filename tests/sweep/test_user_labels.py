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
    assert written.strip().startswith("networks (8): llama3_8b/prefill/b1/seq2048/fused")
    assert len(written.split(", ")) == 4 and len(mix.split(", ")) == 4
    assert "llama3_8b/prefill/b16/seq2048/fused" in mix and "llama3_8b/decode/b16/ctx2304/fused" in mix
