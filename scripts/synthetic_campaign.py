"""Write a synthetic loop-nest campaign of N tiny tasks, for scale and fault tests of the engine.

It uses only real kinds and mappers: a generated network CSV of ``--layers`` tiny convolutions
(K, C in 2..8, OY = OX in 2..4, 1x1 or 3x3 filters, distinct shapes), the ``eyeriss_like``
preset and the Timeloop-like ``random`` mapper with a tiny budget (``max_samples`` samples, one
evaluator batch), run once per seed. Every (layer, seed) is one problem of one work unit, so
``units_per_task = 1`` gives layers x seeds tasks of about a millisecond each.

    python scripts/synthetic_campaign.py --tasks 100000 --dir /tmp/synth [--units-per-task 1]
        [--out /tmp/synth/out] [--samples 8] [--num-cpus 2] [--flush-rows 500000]

prints the campaign path; then ``sweep run /tmp/synth/synthetic.toml``.
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

HEADER = ("# name: synthetic\n# description: tiny generated layers for engine scale tests\n"
          "# source: scripts/synthetic_campaign.py\n")


def tiny_layers(n: int) -> list[dict[str, int]]:
    """``n`` distinct tiny conv layers (dims K, C, OY=OX, FY=FX), deterministic order."""
    shapes = itertools.product((2, 4, 8), (2, 4, 8), (2, 3, 4), (1, 3), (1, 2))
    out = []
    for k, c, o, f, b in shapes:
        out.append({"K": k, "C": c, "OY": o, "OX": o, "FY": f, "FX": f, "B": b})
        if len(out) == n:
            return out
    raise ValueError(f"at most {len(out)} distinct tiny layers; ask for fewer --layers")


def write_campaign(directory: Path, tasks: int, layers: int = 50, units_per_task: int = 1,
                   samples: int = 8, out: Path | None = None, num_cpus: int | None = None,
                   flush_rows: int = 500_000, max_in_flight: int | None = None,
                   name: str = "synthetic") -> Path:
    """Write ``directory/synthetic.csv`` and ``directory/<name>.toml``; return the TOML's path.

    The campaign has ``layers x ceil(tasks / layers)`` problems (>= ``tasks``), one unit each,
    ``units_per_task`` units per task.
    """
    directory.mkdir(parents=True, exist_ok=True)
    rows = ["name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat"]
    for i, l in enumerate(tiny_layers(layers)):
        pad = l["FY"] // 2
        rows.append(f"l{i},{l['K']},{l['C']},{l['OY']},{l['OX']},{l['FY']},{l['FX']},{l['B']},1,1,1,"
                    f"{pad},{pad},conv,1")
    net = directory / "synthetic.csv"
    net.write_text(HEADER + "\n".join(rows) + "\n")
    seeds = math.ceil(tasks / layers)
    run = [f"units_per_task = {units_per_task}", f"flush_rows = {flush_rows}"]
    if num_cpus:
        run.append(f"num_cpus = {num_cpus}")
    if max_in_flight:
        run.append(f"max_in_flight = {max_in_flight}")
    toml = directory / f"{name}.toml"
    toml.write_text(f"""# {layers} tiny layers x {seeds} seeds of a {samples}-sample random search: \
{layers * seeds} problems, one work unit each
name = "{name}"
output = "{(out or directory / 'out').as_posix()}"
networks = [{{ file = "{net.name}" }}]
objectives = ["energy"]
seeds = {{ SEEDS }}

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "random"
params = {{ patience = {samples}, max_samples = {samples}, batch = {min(samples, 512)} }}

[run]
{chr(10).join(run)}
""".replace("{ SEEDS }", f"[{', '.join(map(str, range(seeds)))}]"))
    return toml


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=100_000, help="work units (problems) at least")
    ap.add_argument("--dir", type=Path, required=True, help="where the CSV and TOML go")
    ap.add_argument("--out", type=Path, help="the campaign's output directory (default DIR/out)")
    ap.add_argument("--layers", type=int, default=50)
    ap.add_argument("--units-per-task", type=int, default=1)
    ap.add_argument("--samples", type=int, default=8, help="random mappings sampled per problem")
    ap.add_argument("--num-cpus", type=int)
    ap.add_argument("--flush-rows", type=int, default=500_000)
    ap.add_argument("--max-in-flight", type=int)
    a = ap.parse_args()
    print(write_campaign(a.dir, a.tasks, a.layers, a.units_per_task, a.samples, a.out, a.num_cpus,
                         a.flush_rows, a.max_in_flight))


if __name__ == "__main__":
    main()
