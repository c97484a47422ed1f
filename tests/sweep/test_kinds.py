"""Campaign kinds as a protocol (`sweep.kinds`): every bundled campaign is of the kind its file says,
each kind's tasks write exactly the tables it declares, an unknown kind is a finding, and a new
kind is one class plus one registry entry: the engine runs it without knowing it."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest

from paths import REPO
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store
from sweep.common.errors import CampaignError
from sweep.kinds import KINDS, CampaignKind, detect, load_any, parse_campaign
from sweep.kinds import registry

TINY_NET = (REPO / "tests" / "data" / "tiny_net.csv").as_posix()

#: Each bundled campaign file and the kind its tables make it (read from the files by hand).
BUNDLED = {"area16mm2": "systolic", "salsa_eyeriss": "loopnest", "cosa_simba": "loopnest",
           "flexer_multinpu": "npu", "archsearch_eyeriss": "archsearch", "archsearch_eyeriss_nsga2": "archsearch",
           "dataflow_eyeriss": "archsearch", "tune_salsa_eyeriss": "tune", "tune_salsa_default": "tune",
           "llm_serving": "loopnest", "llm_llama3_8b": "archsearch", "llm_llama3_8b_nsga2": "archsearch",
           "llm_llama3_8b_50k": "archsearch",
           "llm_llama3_70b": "archsearch", "llm_serving_requests": "serving",
           "llm_serving_archsearch": "serving"}


def test_every_bundled_campaign_is_of_the_kind_its_file_says():
    assert sorted(p.stem for p in (REPO / "campaigns").glob("*.toml")) == sorted(BUNDLED)
    for stem, name in BUNDLED.items():
        path = REPO / "campaigns" / f"{stem}.toml"
        kind = detect(tomllib.loads(path.read_text()))
        assert kind is KINDS[name], stem
        got_kind, c = load_any(path)
        assert got_kind is kind
        if name != "tune":
            assert c.plan is kind and c.kind == name and c.resolved_config()["kind"] == name


def test_an_unknown_architecture_kind_is_one_finding_naming_the_key():
    data = {"name": "x", "networks": [{"file": TINY_NET}], "architectures": {"kind": "fpga", "presets": ["a"]},
            "mappers": [{"name": "loma"}]}
    with pytest.raises(CampaignError) as e:
        parse_campaign(data)
    keys = [f.key for f in e.value.problems]
    assert keys == ["architectures.kind"]
    assert "expected one of ['systolic', 'loopnest', 'npu', 'serving']" in str(e.value)


def test_a_tuning_file_given_to_sweep_run_says_to_use_sweep_tune():
    data = tomllib.loads((REPO / "campaigns" / "tune_salsa_eyeriss.toml").read_text())
    with pytest.raises(CampaignError, match="run it with `sweep tune`"):
        parse_campaign(data)


SMALL = {
    "systolic": {"objectives": ["E"], "architectures": {"points": [
        {"J": 16, "K": 16, "fsram_kib": 16, "isram_kib": 16, "psram_kib": 8}]},
        "mappers": [{"name": "deepopt"}], "networks": ["alexnet_deepopt"]},
    "loopnest": {"architectures": {"kind": "loopnest", "presets": ["eyeriss_like"]},
                 "mappers": [{"name": "loma", "params": {"lpf_limit": 3}}]},
    "npu": {"architectures": {"kind": "npu", "presets": ["arch1"]},
            "mappers": [{"name": "static", "params": {"min_channels": 4, "min_spatial": 7,
                                                       "dataflows": ["oy-ox-c-k"]}}]},
    "archsearch": {"architectures": {"kind": "loopnest", "template": "eyeriss_like",
                                     "grid": {"array.D1": [7, 14]}},
                   "mappers": [{"name": "loma", "params": {"lpf_limit": 3}}]},
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_each_kind_writes_exactly_the_tables_it_declares(tmp_path, name):
    data = {"name": name, "networks": [{"file": TINY_NET}], **SMALL[name]}
    c = parse_campaign(data, output=tmp_path / "out")
    assert c.plan is KINDS[name]
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 0 and s.tasks_run == c.plan.count(c) > 0
    store = Store(tmp_path / "out")
    written = {t for t in ("layers", "problems", "archs", "totals", "rows") if store.fragments(t)}
    assert written == set(KINDS[name].tables)
    assert KINDS[name].tables[-1] == "rows"   # rows last: a stored rows fragment marks a task done


# -- a new kind: one class, one registry entry -----------------------------------------------------

class _MacsTask:
    """One (network, accelerator) pair: its MACs times the accelerator's PE count."""

    def __init__(self, net, name: str, acc):
        self.net, self.name, self.acc = net, name, acc
        self.task_id = f"{net.name}@{name}"

    def run(self) -> dict[str, pa.Table]:
        pes = 1
        for n in self.acc.array.values():
            pes *= n
        return {"rows": pa.table({"task_id": [self.task_id], "status": ["ok"], "network": [self.net.name],
                                  "arch": [self.name], "macs_x_pes": [self.net.macs * pes]})}


class PECountKind(CampaignKind):
    """A kind that the engine has never heard of: loop-nest accelerators, no mapping at all."""

    name = "pecount"
    arch_kind = "pecount"
    mapper_kind = "loopnest"
    objectives = ("energy",)
    report_module = "sweep.reports.loopnest"

    def parse_architectures(self, value: Any, base_dir: Path, bad) -> Any:
        from costmodel.loopnest.arch import load_accelerator
        from sweep.config.archspace import ArchSet
        return ArchSet(tuple((n, load_accelerator(n)) for n in value["presets"]), spec=value)

    def expand(self, campaign) -> Iterator[Any]:
        for net in campaign.networks:
            for n, acc in campaign.architectures.archs:
                yield _MacsTask(net, n, acc)

    def count(self, campaign) -> int:
        return len(campaign.networks) * len(campaign.architectures)


def test_a_new_kind_is_one_class_and_one_registry_entry(tmp_path, monkeypatch):
    monkeypatch.setitem(registry.KINDS, "pecount", PECountKind())
    data = {"name": "pe", "networks": [{"file": TINY_NET}, "alexnet_deepopt"], "mappers": [{"name": "loma"}],
            "architectures": {"kind": "pecount", "presets": ["eyeriss_like", "tpu_like"]}}
    c = parse_campaign(data, output=tmp_path / "out")
    assert c.kind == "pecount" and c.resolved_config()["kind"] == "pecount"
    s = run_campaign(c, executor="local")
    assert s.tasks_run == 4
    rows = Store(tmp_path / "out").read("rows").set_index(["network", "arch"])["macs_x_pes"]
    # by hand: tiny_net 68,992 MACs (its CSV header); eyeriss_like 14 x 12 PEs, tpu_like 32 x 32
    assert rows[("tiny_net", "eyeriss_like")] == 68_992 * 168
    assert rows[("tiny_net", "tpu_like")] == 68_992 * 1024
    assert set(rows.index.get_level_values(0)) == {"tiny_net", "alexnet_deepopt"}
