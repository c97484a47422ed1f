"""`[workload] model = ...` takes the models a campaign's networks take: a zoo decoder, or a decoder's
Hugging Face config.json relative to the campaign file (`sweep.config.networks.parse_workload`); an
encoder, a ViT, a CNN, a missing or broken file exit 2 naming the key; the mix's identity holds the
file's shapes (an edited file, new task ids) and is the name alone for a zoo model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep import api
from sweep.cli import app
from sweep.engine.design_tasks import make_task
from sweep.engine.store import Store

runner = CliRunner()
MODELS = Path(__file__).resolve().parents[3] / "costmodel" / "transformer" / "models"

# fusion given: the expected steps do not depend on the default way attention runs
CAMPAIGN = """
name = "mix_file"
output = "{out}"
objectives = ["latency"]
seeds = [0]
{networks}
[workload]
{model}
prompt = {prompt}
output_tokens = {output}
batch = {batch}
points = 2
fusion = "fused"

[architectures]
kind = "loopnest"
template = "tpu_like"

[architectures.grid]
array.D1 = [16]

[search]
sampler = "grid"
objectives = ["request_latency_s"]

[[mappers]]
name = "loma"
params = {{ lpf_limit = 4 }}
"""


def _campaign(folder: Path, model: str, prompt: int = 32, output: int = 2, batch: int = 2,
              networks: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "c.toml"
    p.write_text(CAMPAIGN.format(out=(folder / "out").as_posix(), model=model, prompt=prompt, output=output,
                                 batch=batch, networks=networks))
    return p


def _copy(name: str, to: Path, edit: dict | None = None) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    if edit is None:
        shutil.copy(MODELS / f"{name}.json", to)
    else:
        to.write_text(json.dumps({**json.loads((MODELS / f"{name}.json").read_text()), **edit}))
    return to


def _shape(net) -> tuple:
    return ([(l.name, l.hash_fields()) for l in net.layers], net.repeats, net.vector_ops, net.vector_repeats)


def test_a_config_json_mix_validates_and_its_steps_are_the_zoo_models(tmp_path, monkeypatch):
    folder = tmp_path / "campaign"
    _copy("gpt2", folder / "models" / "my_model.json")
    p = _campaign(folder, 'model = "models/my_model.json"')
    monkeypatch.chdir(tmp_path)  # the path is the campaign file's, not the working directory's
    res = runner.invoke(app, ["validate", str(p)])
    assert res.exit_code == 0, res.output
    assert "my_model/prefill/b2/seq32" in res.output and not (folder / "out").exists()
    mine = api.load_campaign(p)
    zoo = api.load_campaign(_campaign(tmp_path / "zoo", 'model = "gpt2"'))
    assert [n.name for n in mine.networks] == ["my_model/prefill/b2/seq32", "my_model/decode/b2/ctx33",
                                               "my_model/decode/b2/ctx34"]
    assert [_shape(n) for n in mine.networks] == [_shape(n) for n in zoo.networks]
    assert [n.macs for n in mine.networks] == [n.macs for n in zoo.networks]
    # decode at context 33, batch 2, by hand from GPT-2's config (d = 768, 12 blocks, 12 heads of 64,
    # FFN 3,072, vocabulary 50,257; Radford et al. 2019): per token and block 4 d^2 + 2 x d x 3,072
    # = 7,077,888 (Q, K, V, O; FFN up, down) + 2 x 12 x 64 x 33 = 50,688 (score, context); x 12 blocks
    # + the LM head d x 50,257 = 38,597,376 -> 124,140,288 per token, x 2 sequences
    assert mine.networks[1].macs == 2 * (12 * (7_077_888 + 50_688) + 38_597_376) == 248_280_576
    assert mine.workload.name == "my_model/mix/b2/p32/o2"
    assert mine.workload.step_names() == [n.name for n in mine.networks]
    # the same file named as `config = ...`, the networks' spelling
    again = api.load_campaign(_campaign(tmp_path / "cfg", f'config = "{(folder / "models" / "my_model.json").as_posix()}"'))
    assert [_shape(n) for n in again.networks] == [_shape(n) for n in zoo.networks]


def test_the_mix_identity_is_the_name_for_a_zoo_model_and_the_shapes_for_a_file(tmp_path):
    zoo = api.load_campaign(_campaign(tmp_path / "zoo", 'model = "gpt2"'))
    # a zoo model's table holds its name only (a file's, its shapes: below)
    assert zoo.workload.to_dict() == {"model": "gpt2", "prompt": 32, "output": 2, "batch": 2, "points": 2}
    f = _copy("gpt2", tmp_path / "m" / "gpt2x.json")
    p = _campaign(tmp_path / "m", 'model = "gpt2x.json"')
    first = api.load_campaign(p)
    shape = first.workload.to_dict()["config"]
    assert shape["layers"] == 12 and shape["hidden"] == 768 and shape["kind"] == "decoder"
    task, hash_ = make_task(first, [0]).task_id, first.config_hash()
    assert api.load_campaign(p).config_hash() == hash_  # the same file: the same ids
    _copy("gpt2", f, edit={"n_layer": 6})  # edited in place: same name, same path
    edited = api.load_campaign(p)
    assert edited.workload.to_dict()["config"]["layers"] == 6
    assert edited.workload.name == first.workload.name
    assert edited.config_hash() != hash_ and make_task(edited, [0]).task_id != task


@pytest.mark.parametrize("model, file, key, why", [
    ('model = "nowhere.json"', None, "workload.model", "no such file"),
    ('model = "bert_base"', None, "workload.model", "no decode step"),
    ('model = "vit_b16"', None, "workload.model", "no decode step"),
    ('model = "enc.json"', ("bert_base", "enc.json", None), "workload.model", "no decode step"),
    ('model = "vit.json"', ("vit_b16", "vit.json", None), "workload.model", "no decode step"),
    ('model = "resnet50"', None, "workload.model", "not a transformer"),
    ('model = "llama9"', None, "workload.model", "unknown model"),
    ('model = "bad.json"', ("gpt2", "bad.json", {"n_head": -1}), "workload.model", "n_head"),
    ('config = "nowhere.json"', None, "workload.config", "no such file"),
    ('config = "gpt2"', None, "workload.config", "config.json"),
    ('model = "gpt2"\nconfig = "x.json"', None, "workload.config", "not both"),
])
def test_a_bad_model_exits_2_naming_the_key_and_the_value(tmp_path, model, file, key, why):
    if file is not None:
        _copy(file[0], tmp_path / file[1], edit=file[2])
    p = _campaign(tmp_path, model)
    res = runner.invoke(app, ["validate", str(p)], env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    value = model.split('"')[-2]
    text = " ".join(res.output.split())
    assert key in text and value in text and why in text, res.output
    assert not (tmp_path / "out").exists()


def test_a_file_named_like_a_zoo_model_with_other_shapes_is_refused(tmp_path):
    nets = 'networks = [{model = "gpt2", phase = "decode", batch = 2, context = 33, fusion = "fused"}]\n'
    _copy("gpt2", tmp_path / "a" / "gpt2.json", edit={"n_layer": 6})  # its steps are named gpt2/...
    res = runner.invoke(app, ["validate", str(_campaign(tmp_path / "a", 'model = "gpt2.json"', networks=nets))])
    assert res.exit_code == 2 and "workload.model" in res.output and "gpt2/decode/b2/ctx33" in res.output, res.output
    _copy("gpt2", tmp_path / "b" / "gpt2.json")  # the same shapes: the step is the network, mapped once
    c = api.load_campaign(_campaign(tmp_path / "b", 'model = "gpt2.json"', networks=nets))
    assert [n.name for n in c.networks] == ["gpt2/decode/b2/ctx33", "gpt2/prefill/b2/seq32", "gpt2/decode/b2/ctx34"]


def test_a_config_json_mix_runs_to_the_zoo_models_figures(tmp_path):
    _copy("gpt2", tmp_path / "mine" / "my_model.json")
    rows = {}
    for folder, model in (("mine", 'model = "my_model.json"'), ("zoo", 'model = "gpt2"')):
        p = _campaign(tmp_path / folder, model, prompt=8, output=2, batch=1)
        res = runner.invoke(app, ["run", str(p), "--executor", "local"])
        assert res.exit_code == 0, res.output
        t = Store(tmp_path / folder / "out").read("totals")
        rows[folder] = t[t["phase"] == "mix"].iloc[0]
    assert rows["mine"]["network"] == "my_model/mix/b1/p8/o2" and rows["mine"]["status"] == "ok"
    for k in ("energy_pj", "latency_cycles", "request_latency_s", "energy_per_request_j"):
        assert rows["mine"][k] == rows["zoo"][k], k
    # the mix is its prefill plus its two decode steps (contexts 9 and 10, one token each)
    t = Store(tmp_path / "mine" / "out").read("totals").set_index("network")
    steps = ["my_model/prefill/b1/seq8", "my_model/decode/b1/ctx9", "my_model/decode/b1/ctx10"]
    assert rows["mine"]["latency_cycles"] == pytest.approx(sum(t.loc[s, "latency_cycles"] for s in steps))
    # the file edited (6 blocks): its stored rows are not the campaign's any more, so they are not reused
    _copy("gpt2", tmp_path / "mine" / "my_model.json", edit={"n_layer": 6})
    again = runner.invoke(app, ["run", str(tmp_path / "mine" / "c.toml"), "--executor", "local"])
    assert again.exit_code == 2 and "another campaign or configuration" in " ".join(again.output.split()), again.output


def test_a_gqa_models_config_json_gives_the_zoo_models_mix(tmp_path):
    from sweep.config.networks import mix_networks, parse_workload
    _copy("llama3_2_1b", tmp_path / "Llama-3.2-1B" / "config.json")  # named after its folder
    found: list = []
    table = {"prompt": 64, "output_tokens": 8, "batch": 2, "points": 3, "fusion": "fused"}
    mine = parse_workload({"model": "Llama-3.2-1B/config.json", **table}, lambda *a: found.append(a), tmp_path)
    zoo = parse_workload({"model": "llama3_2_1b", **table}, lambda *a: found.append(a), tmp_path)
    assert not found and mine.name == "Llama-3.2-1B/mix/b2/p64/o8"
    assert mine.contexts() == zoo.contexts() == [65, 69, 72]  # 65 + 7 x 1/2 = 68.5, rounded half up
    a, b = mix_networks(mine, lambda *a: found.append(a)), mix_networks(zoo, lambda *a: found.append(a))
    assert not found and [_shape(n) for n in a] == [_shape(n) for n in b]
    assert [n.name for n in a] == mine.step_names()


@pytest.mark.parametrize("line, key", [("weight_bits = 5", "workload.weight_bits"),
                                       ("act_bits = 3", "workload.act_bits"),
                                       ("kv_bits = 0", "workload.kv_bits")])
def test_a_mix_precision_that_is_no_format_is_the_one_problem_named(tmp_path, line, key):
    """A [workload] whose precision is no format served exits 2 naming it, and only it: the request
    objective does not also ask for a [workload] table the campaign has."""
    p = _campaign(tmp_path, f'model = "gpt2"\n{line}')
    res = runner.invoke(app, ["validate", str(p)], env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert key in text and "1 problem(s)" in text and "[workload] table" not in text, res.output
    assert not (tmp_path / "out").exists()


def test_a_mix_precision_given_names_its_steps_and_reaches_them(tmp_path):
    """weight_bits / act_bits of a [workload] are its steps' (the names carry them, as a network
    step's do: /w8/a8), and its table keeps them (so its task ids follow them)."""
    c = api.load_campaign(_campaign(tmp_path, 'model = "gpt2"\nweight_bits = 8\nact_bits = 16'))
    assert c.workload.step_names() == ["gpt2/prefill/b2/seq32/w8/a16", "gpt2/decode/b2/ctx33/w8/a16",
                                       "gpt2/decode/b2/ctx34/w8/a16"] == [n.name for n in c.networks]
    assert c.workload.to_dict()["weight_bits"] == 8 and c.workload.to_dict()["act_bits"] == 16
    q = next(l for l, _ in c.networks[1] if l.name == "q_proj")
    assert (q.w_bits, q.i_bits) == (8, 16) and set(q.fixed_bits) == {"W", "I", "O_final"}
