"""Paired before / after timing of one command in two checkouts of the project, on one machine.

    git worktree add /tmp/before HEAD~1
    python scripts/bench_paired.py /tmp/before . --repeats 3 -- \\
        python scripts/bench_spatial_choice.py --arch h100 --gemm 4096x8192x57344
    python scripts/bench_paired.py /tmp/before . --repeats 1 --out-arg --out -- \\
        sweep run campaigns/llm_llama3_8b.toml --no-progress

The command runs alternately in each checkout (A = the first, B = the second; rounds A B, B A,
A B, ... so drift and warm caches hit both alike), with the checkout as the working directory and
first on ``PYTHONPATH``, so ``python``, ``sweep`` (run as ``python -c 'import sweep; sweep.main()'``)
and the scripts import that checkout's code. With ``--out-arg FLAG`` each run gets ``FLAG
<fresh temporary directory>`` (a result directory per run, deleted afterwards). Printed: each run's
wall time (s), the median per checkout, and the paired ratios B / A (one per round: the two runs
of a round are neighbours in time) with their median, min and max. Exit status: 1 if any run
failed (its stderr's last lines printed), else 0.

Speed is measured here, never in the test suite. Keep the machine otherwise quiet.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def command_for(checkout: Path, argv: list[str]) -> list[str]:
    """``argv`` as run in ``checkout``: a leading ``sweep`` becomes ``python -c`` on that checkout's
    entry point (the console script would import the installed copy)."""
    if argv and argv[0] == "sweep":
        return [sys.executable, "-c", "import sys, sweep; sys.argv[0] = 'sweep'; sys.exit(sweep.main())", *argv[1:]]
    if argv and argv[0] == "python":
        return [sys.executable, *argv[1:]]
    return list(argv)


def run_once(checkout: Path, argv: list[str], out_arg: str | None) -> tuple[float, int, str]:
    """(wall s, exit status, last stderr lines) of one run of ``argv`` in ``checkout``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               RAY_USAGE_STATS_ENABLED="0", DSE_SWEEP_NO_BROWSER="1")
    tmp = tempfile.mkdtemp(prefix="bench-paired-") if out_arg else None
    cmd = command_for(checkout, argv) + ([out_arg, str(Path(tmp) / "out")] if out_arg else [])
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    return wall, p.returncode, "\n".join(p.stderr.strip().splitlines()[-5:])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 usage="%(prog)s BEFORE AFTER [--repeats N] [--out-arg FLAG] -- COMMAND ...")
    ap.add_argument("before", type=Path, help="checkout A (e.g. a git worktree of the commit before)")
    ap.add_argument("after", type=Path, help="checkout B")
    ap.add_argument("--repeats", type=int, default=3, help="rounds; each runs A and B once (default 3)")
    ap.add_argument("--out-arg", default=None, metavar="FLAG",
                    help="give each run FLAG <fresh temporary directory> (e.g. --out for sweep run)")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    cmd = argv[cut + 1:]
    if not cmd:
        ap.error("no command: give it after --")
    if a.repeats < 1:
        ap.error(f"--repeats {a.repeats}: must be >= 1")
    sides = {"A": a.before.resolve(), "B": a.after.resolve()}
    for k, d in sides.items():
        if not (d / "sweep" / "__init__.py").is_file():
            ap.error(f"checkout {k} {d}: not a checkout of the project (no sweep/__init__.py)")
    times: dict[str, list[float]] = {"A": [], "B": []}
    failed = False
    for i in range(a.repeats):
        for k in (("A", "B") if i % 2 == 0 else ("B", "A")):
            wall, rc, err = run_once(sides[k], cmd, a.out_arg)
            times[k].append(wall)
            print(f"round {i + 1} {k} ({sides[k]}): {wall:8.2f} s" + ("" if rc == 0 else f"  exit {rc}"), flush=True)
            if rc != 0:
                failed = True
                sys.stdout.flush()
                print(err, file=sys.stderr, flush=True)
    ratios = [b / x for x, b in zip(times["A"], times["B"])]
    print(f"\nmedian A {statistics.median(times['A']):.2f} s, B {statistics.median(times['B']):.2f} s; "
          f"paired B / A: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, "
          f"{len(ratios)} rounds)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
