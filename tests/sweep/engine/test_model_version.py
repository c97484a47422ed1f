"""Rows of two loop-nest models never mix: the model's version is part of every loop-nest
problem_id and of the campaign's config hash (so `--resume` into an old directory is refused)."""

from __future__ import annotations

from paths import CAMPAIGNS
from sweep.kinds import load_campaign
from sweep.engine.layer_tasks import _problems


def _with_model(monkeypatch, version):
    """The loop-nest kind as if the model's version were ``version`` (its rules say it)."""
    from sweep.kinds.loopnest import LoopnestKind
    monkeypatch.setattr(LoopnestKind, "rules", LoopnestKind.rules._replace(model=version))
    return LoopnestKind.rules


def _ids_and_hash(monkeypatch, version):
    rules = _with_model(monkeypatch, version)
    c = load_campaign(CAMPAIGNS / "salsa_eyeriss.toml")
    return [p[0] for p in _problems(c, rules)[0]], c.config_hash()


def test_loopnest_ids_and_hash_follow_the_model_version(monkeypatch):
    ids_a, hash_a = _ids_and_hash(monkeypatch, 2)
    ids_b, hash_b = _ids_and_hash(monkeypatch, 3)
    assert len(ids_a) == len(ids_b) > 0
    assert not set(ids_a) & set(ids_b)
    assert hash_a != hash_b


def test_npu_campaigns_do_not_carry_the_loopnest_model(monkeypatch):
    c = load_campaign(CAMPAIGNS / "flexer_multinpu.toml")
    before = c.config_hash()
    _with_model(monkeypatch, 99)
    assert load_campaign(CAMPAIGNS / "flexer_multinpu.toml").config_hash() == before
