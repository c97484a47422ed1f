"""A tiny tuning campaign for the `sweep tune` tests (2 small ResNet-34 layers, budget 200)."""

from pathlib import Path

TINY_TUNE = """
name = "tiny_tune"
output = "{out}"
mapper = "{mapper}"
arch = "eyeriss_like"
budget = 200
seeds = [0, 1]
objectives = {objectives}
trials = {trials}
parallel = 2

[space]
t0 = {{ low = 0.005, high = 0.5, log = true }}
rho = {{ low = 0.98, high = 0.9999 }}
chains = {{ choices = [1, 2, 4] }}

[sampler]
name = "{sampler}"
seed = 0
n_startup_trials = 3

[pruner]
name = "{pruner}"
n_startup_trials = 2

[training]
network = "resnet34"
layers = ["fc", "layer4.0.downsample"]

[heldout]
network = "mobilenet_v2"
layers = ["block14_dw"]
seeds = [100, 101]
defaults = {{ t0 = 0.05, rho = 0.999, iterations = 200, chains = 1 }}

[reference]
max_orderings = 200000
shards = 1
"""


def write_tune(tmp_path: Path, out: Path | None = None, name: str = "tune.toml", trials: int = 4,
               sampler: str = "tpe", pruner: str = "median", objectives: str = '["gap"]',
               mapper: str = "salsa", extra: str = "") -> Path:
    p = tmp_path / name
    p.write_text(TINY_TUNE.format(out=(out or tmp_path / "out").as_posix(), trials=trials, sampler=sampler,
                                  pruner=pruner, objectives=objectives, mapper=mapper) + extra)
    return p
