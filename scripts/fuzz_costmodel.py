"""Fuzz the fast loop-nest kernel against the reference for as long as wanted, with random seeds.

    python scripts/fuzz_costmodel.py --minutes 10 [--seed S] [--backends numba,python]
    python scripts/fuzz_costmodel.py --replay failure.json

The cases are those of the CI test ``tests/costmodel/loopnest/test_kernel_fuzz.py``: whole problems
drawn by ``tests/loopnest_strategies.py`` (layer, accelerator, spatial unrolling, LPFs, even, 1-6
orderings), each ordering checked on every backend of `OrderingEvaluator` against
``reference.evaluate(layer, arch, allocate(...))`` by `loopnest_strategies.check_case` (validity,
energy, latency, EDP, and, if the evaluator has ``access_counts``, the boundaries, every access
count and every stall).

How cases are drawn: the run is a sequence of chunks; each chunk is a Hypothesis ``@given`` run
of ``--chunk`` examples under ``@seed(s)``, s the next 64-bit number of
``random.Random(--seed)`` (no example database, not derandomized), so ``--seed S`` replays a run
(for one Hypothesis version) and distinct seeds explore distinct cases. This keeps the CI test's
strategies and Hypothesis's shrinking without ``strategy.example()``.

Failures: a disagreement of a new kind (its most fundamental quantity and the backends showing
it) lets Hypothesis shrink the case to a small one (for at most ``--shrink-seconds``, beyond
``--minutes``); that case is printed as JSON (`loopnest_strategies.case_to_dict`: the layer, the
accelerator as a dict, the spatial unrolling, factors, even and all the orderings in order, also
as loops: the kernel reuses what an ordering shares with the previous one) and written to
``--out`` if given; ``--replay FILE`` checks such a file again. Later disagreements of known
kinds are counted, not shrunk. Exit status 1 if any disagreement was found, else 0.

Works from a clean clone: the repository root and its ``tests/`` are put on ``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(os.path.abspath(__file__)).parent.parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "tests"))   # after the root: tests/costmodel must not shadow costmodel

from hypothesis import HealthCheck, Verbosity, given, seed, settings  # noqa: E402

from costmodel.loopnest.ordering import OrderingEvaluator  # noqa: E402
from loopnest_strategies import (BACKENDS, available_backends, case_from_dict, case_to_dict, cases,  # noqa: E402
                                 check_case, features)


class Run:
    """Counters and failures of one fuzzing run."""

    def __init__(self, backends, counts: bool, shrink_seconds: float, end: float):
        self.backends, self.counts, self.end = backends, counts, end
        self.shrink, self.shrink_seconds, self.shrink_end = shrink_seconds > 0, shrink_seconds, end
        self.cases = self.orderings = self.valid = self.shrink_steps = 0
        self.tally: dict = {}
        self.tags: dict[str, int] = {}
        self.failures: list[dict] = []     # one per kind: the smallest case found (first if unshrunk)
        self.kinds: dict[tuple, int] = {}  # kind -> how many cases showed it
        self.last: dict | None = None      # the latest failing case of this chunk
        self.shrinking = False

    def check(self, case) -> list[tuple[str, int, str]]:
        """All disagreements of ``case`` over the backends (the reference evaluated once)."""
        reports, errors = None, []
        for b in self.backends:
            try:
                errs, reports = check_case(case, b, reports, counts=self.counts, tally=self.tally)
            except Exception as e:   # a crash of the kernel (or of the reference) is a finding too
                errs = [(-1, f"exception {type(e).__name__}: {e}")]
            errors += [(b, i, msg) for i, msg in errs]
        if not self.shrinking and reports is not None:
            self.cases += 1
            self.orderings += len(reports)
            self.valid += sum(r is not None and r.valid for r in reports)
            for t in features(case, reports):
                self.tags[t] = self.tags.get(t, 0) + 1
        return errors


#: Categories of disagreement, most fundamental first, and the words of the quantities in each
_CATEGORIES = (("exception", ("exception",)), ("validity", ("valid", "invalid", "access_counts")),
               ("batch rows", ("evaluate row",)), ("boundaries", ("boundaries",)),
               ("access counts", ("reads", "writes")), ("stalls", ("stall_cycles",)), ("energy", ("energy_pj",)),
               ("latency", ("latency_cycles",)), ("edp", ("edp",)))


def _kind(errors) -> tuple:
    """The kind of a failure: its most fundamental category of disagreement (`_CATEGORIES`: a
    wrong validity explains wrong costs, a wrong allocation wrong counts, ...) and the backends
    that show it. One kind is shrunk once per run."""
    for name, words in _CATEGORIES:
        backends = sorted({b for b, _, msg in errors if any(w in msg.split(":")[0] for w in words)})
        if backends:
            return (name, tuple(backends))
    return ("other", tuple(sorted({b for b, _, _ in errors})))


def _chunk(run: Run, s: int, n: int) -> None:
    """One Hypothesis run of ``n`` examples under seed ``s``. A failure of a new kind is shrunk:
    the body raises for the cases that fail with that kind, Hypothesis looks for the smallest,
    and `Run.last` keeps the latest (Hypothesis ends by replaying the minimal case)."""
    run.last, run.shrinking = None, False

    @seed(s)
    @settings(max_examples=n, deadline=None, database=None, derandomize=False, verbosity=Verbosity.quiet,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(case=cases())
    def body(case):
        if time.monotonic() > (run.shrink_end if run.shrinking else run.end):
            return   # time is up (while shrinking: Hypothesis then reports the failure as flaky)
        run.shrink_steps += run.shrinking
        errors = run.check(case)
        kind = _kind(errors)
        if run.shrinking:
            if kind != run.last["kind"]:
                return
        elif errors:
            run.kinds[kind] = run.kinds.get(kind, 0) + 1
            known = any(f["kind"] == kind for f in run.failures)
            if known or not run.shrink:
                if not known:
                    run.failures.append(dict(kind=kind, seed=s, errors=errors, case=case))
                return
            run.shrinking = True
            run.shrink_end = time.monotonic() + run.shrink_seconds
        else:
            return
        run.last = dict(kind=kind, seed=s, errors=errors, case=case)
        raise AssertionError(kind)

    try:
        body()
    except Exception:   # our AssertionError, or Hypothesis's flaky error when shrinking ran out of time
        if run.last is None:
            raise
        run.failures.append(run.last)
    run.shrinking = False


def _describe(f: dict) -> str:
    """A failure as text: its messages (the first 20) and a JSON reproducer of the whole case."""
    lines = [f"FAILURE {f['kind']} (chunk seed {f['seed']}):"]
    lines += [f"  {b}: ordering {i}: {msg}" for b, i, msg in f["errors"][:20]]
    bad = sorted({i for _, i, _ in f["errors"]})
    lines.append(f"  reproducer (orderings {bad} disagree; earlier ones can matter: the kernel reuses the "
                 f"previous ordering's prefix): {json.dumps(case_to_dict(f['case']))}")
    return "\n".join(lines)


def _report(run: Run, args, wall: float) -> None:
    print(f"seed {args.seed}, {wall:.0f} s, backends {', '.join(run.backends)}, "
          f"access counts {'compared' if run.counts else 'NOT compared (OrderingEvaluator has no access_counts)'}")
    print(f"cases run: {run.cases}; orderings compared: {run.orderings} per backend "
          f"({run.valid} valid); shrink steps: {run.shrink_steps}")
    same = sum(v for (q, how), v in run.tally.items() if how == "identical")
    close = {q: v for (q, how), v in run.tally.items() if how == "close"}
    print(f"float comparisons bit-identical: {same}; equal within 1e-12 only: {sum(close.values())} {close or ''}")
    print("coverage: " + ", ".join(f"{t} {n}" for t, n in sorted(run.tags.items())))
    print(f"failures: {sum(run.kinds.values())} cases in {len(run.kinds)} kinds")
    for kind, n in run.kinds.items():
        print(f"  {n} cases: {kind}")
    for k, f in enumerate(run.failures):
        print(_describe(f))
        if args.out:
            path = Path(args.out) / f"failure_{args.seed}_{k}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            d = case_to_dict(f["case"])
            d["disagreements"] = [f"{b}: ordering {i}: {msg}" for b, i, msg in f["errors"]]
            path.write_text(json.dumps(d, indent=1))
            print(f"  written to {path}")


def _replay(path: str, backends, counts: bool) -> int:
    data = json.loads(Path(path).read_text())
    bad = 0
    for d in data if isinstance(data, list) else [data]:
        case = case_from_dict(d)
        for b in backends:
            errors, _ = check_case(case, b, counts=counts)
            for i, msg in errors:
                print(f"{b}: ordering {i}: {msg}")
            bad += len(errors)
    print(f"{path}: {bad} disagreements")
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="run time (default 10)")
    p.add_argument("--seed", type=int, default=None, help="run seed (default: random, printed)")
    p.add_argument("--chunk", type=int, default=50, help="examples per Hypothesis run (default 50)")
    p.add_argument("--backends", default=None,
                   help=f"comma-separated subset of {BACKENDS} (default: all available)")
    p.add_argument("--shrink-seconds", type=float, default=120.0,
                   help="time to shrink each new kind of failure, beyond --minutes (default 120; 0: as drawn)")
    p.add_argument("--out", default=None, help="directory for the JSON reproducers of failures")
    p.add_argument("--replay", default=None, help="check a JSON reproducer (or a list of them) again")
    args = p.parse_args(argv)
    backends = tuple(args.backends.split(",")) if args.backends else available_backends()
    counts = hasattr(OrderingEvaluator, "access_counts")
    if args.replay:
        return _replay(args.replay, backends, counts)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 32)
    print(f"fuzz_costmodel: seed {args.seed}, {args.minutes} min", flush=True)
    t0 = time.monotonic()
    run = Run(backends, counts, args.shrink_seconds, t0 + 60 * args.minutes)
    rng = random.Random(args.seed)
    while time.monotonic() < run.end:
        _chunk(run, rng.getrandbits(64), args.chunk)
    _report(run, args, time.monotonic() - t0)
    return 1 if run.kinds else 0


if __name__ == "__main__":
    sys.exit(main())
