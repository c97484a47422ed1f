"""A mapper configuration's label names what differs between the campaign's entries of that
mapper (issue 30, item 5). Before the fix the label showed a fixed list of parameters:
`examples/read_results.py`'s random with ``max_samples = 200`` read ``random(patience=500)``, and
two random entries differing only in ``max_samples`` shared that label (one column for both).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pandas as pd

from mappers import get_mapper
from sweep import api
from sweep.reports.loopnest import mapper_labels

ROOT = Path(__file__).resolve().parents[3]
TINY_NET = ROOT / "tests" / "data" / "tiny_net.csv"


def _full(name: str, **params) -> str:
    """The params JSON a row stores: the mapper's defaults, the given values, a seed."""
    full = {p.name: p.default for p in get_mapper(name).params}
    return json.dumps({**full, **params, "seed": 0}, sort_keys=True)


def test_entries_differing_in_one_parameter_are_named_by_it():
    a, b = ("random", _full("random", max_samples=200)), ("random", _full("random", max_samples=1000))
    labels = mapper_labels([a, b, ("loma", _full("loma", lpf_limit=4))])
    assert labels[a] == "random(max_samples=200)" and labels[b] == "random(max_samples=1000)"
    assert labels[("loma", _full("loma", lpf_limit=4))] == "loma"  # one entry: the name alone


def test_seeds_do_not_make_entries():
    one = _full("salsa", iterations=100)
    other_seed = json.dumps({**json.loads(one), "seed": 7}, sort_keys=True)
    labels = mapper_labels([("salsa", one), ("salsa", other_seed)])
    assert set(labels.values()) == {"salsa"}


def test_bundled_salsa_eyeriss_loma_entries_stay_distinct():
    doc = tomllib.loads((ROOT / "campaigns" / "salsa_eyeriss.toml").read_text())
    entries = [(m["name"], _full(m["name"], **m.get("params", {}))) for m in doc["mappers"]]
    labels = mapper_labels(entries)
    loma = [labels[e] for e in entries if e[0] == "loma"]
    assert len(loma) == 2 and len(set(loma)) == 2
    assert all("lpf_limit=" in l and "max_orderings=" in l for l in loma), loma
    assert len(set(labels.values())) == len(entries)


def test_two_random_entries_get_two_columns(tmp_path):
    """End to end: a campaign with random at two sample budgets reports two labelled results per layer."""
    campaign = {"name": "two_randoms", "networks": [{"file": str(TINY_NET)}], "objectives": ["energy"],
                "architectures": {"kind": "loopnest", "presets": ["eyeriss_like"]},
                "mappers": [{"name": "random", "params": {"max_samples": 20}},
                            {"name": "random", "params": {"max_samples": 40}}]}
    run = api.run_campaign(campaign, tmp_path / "out", executor="local")
    lay = api.load_results(run.output).layers
    assert set(lay["label"]) == {"random(max_samples=20)", "random(max_samples=40)"}
    assert isinstance(lay.pivot_table(index="layer", columns="label", values="energy_pj"), pd.DataFrame)
    assert lay.groupby("layer")["label"].nunique().eq(2).all()
