"""The default spatial choice against the exhaustive spatial search, per GEMM, objective latency.

    python scripts/bench_spatial_choice.py                          # the h100 preset's large GEMMs
    python scripts/bench_spatial_choice.py --set llmcompass --set llm
    python scripts/bench_spatial_choice.py --arch a100 --gemm 1024x12288x12288
    python scripts/bench_spatial_choice.py --set vidur --rule loma --rule loma_no_ties --rule utilization

For each GEMM (M x K x N = B x C x K of a matmul layer) SALSA (its default parameters, seed 0) runs
on the unrollings of four rules (`mappers.spatial`): ``loma`` (the default: of the 12 best by
utilisation, up to 3 kept by a coarse exhaustive LOMA probe, those whose bound cannot win not
probed), ``utilization`` (the top 3 by utilisation, the default before), ``probe`` (the top 3 of a
pool of 12 re-ranked by 64 random orderings each) and ``all`` (every candidate, in utilisation
order, a candidate whose latency bound exceeds the best found not run: what ``sweep map --param
spatial_candidates=all`` does); ``loma_no_ties`` is ``loma`` with its tie tolerance off
(`mappers.spatial.TIE_RTOL` and ``TIE_CYCLES`` 0: the rule before 2026-12-04, every candidate whose
bound is below a probe value by any amount probed and kept). ``--rule`` picks rules (repeatable;
the gaps are then to the best rule run when ``all`` is not among them); ``default`` is SALSA's
default spatial choice, whatever the code under test makes it, and ``--code DIR`` runs another
checkout's code (``git worktree add DIR COMMIT``), so a GEMM's time then and now compare:

    python scripts/bench_spatial_choice.py --set vidur --rule default --code /tmp/old

Printed per GEMM and
rule: latency as a multiple of the compute floor (MACs / PEs cycles), its gap to ``all``, the
energy of the mapping kept against the first rule's, units listed and run, the wall time (s; the
kernel's compile excluded by a warm-up; each rule's spatial choice from an empty cache; the rules
run one after the other in one process, so the times are paired) and the unrolling kept. The
summary gives per rule the worst and mean gap, the range of the energy ratios, and the wall time
against ``utilization`` (sum over the GEMMs, and the largest per GEMM).

Sets (``--set``, repeatable): ``h100`` (the h100 preset: a 57,344-wide FFN up projection, its down
projection, 8,192^3, a 7,168-wide projection, two decode GEMMs), ``llmcompass`` (the a100 preset
on LLMCompass's 20 A100 matmuls, tests/data/llmcompass_a100/matmul_A100.csv), ``vidur`` (the a100
preset on the projections of Vidur's Llama-3-8B / 70B profiles at TP 1-8 and 1 to 32,768 tokens
in steps of 8x, `sweep.commands.silicon_vidur`; 192 GEMMs, about 40 minutes) and ``llm`` (the
llm_ws preset on Llama-3-8B's projections and LM head at the bundled grid's prefill of 2,048
tokens and decode batches 1 / 16 / 64).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ROOT = Path(__file__).resolve().parent.parent
#: ``--code DIR``: the code under test is that checkout (the GEMM sets' data still from this one)
CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve() if "--code" in sys.argv[:-1] else ROOT
sys.path.insert(0, str(CODE))

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.workload import Layer  # noqa: E402
from mappers import get_mapper, spatial  # noqa: E402
from mappers.base import check_params  # noqa: E402
from sweep.engine.problem import Problem  # noqa: E402

RULES = {"default": {"spatial": "search"},
         "loma": {"spatial": "search"},
         "loma_no_ties": {"spatial": "search"},
         "utilization": {"spatial": "search", "spatial_rank": "utilization"},
         "probe": {"spatial": "search", "spatial_rank": "probe"},
         "all": {"spatial": "search", "spatial_candidates": "all"}}


def _llmcompass() -> list[str]:
    rows = (ROOT / "tests/data/llmcompass_a100/matmul_A100.csv").read_text().splitlines()
    return ["x".join(x.strip() for x in r.split(",")[:3]) for r in rows if r.strip()]


def _vidur() -> list[str]:
    from sweep.commands.silicon_vidur import _ops
    out: list[str] = []
    for model in ("llama-3-8b", "llama-3-70b"):
        for tp in (1, 2, 4, 8):
            for t in (1, 8, 64, 512, 4096, 32768):
                for kind, sh in _ops(model, tp, t).values():
                    g = f"{sh['m']}x{sh['k']}x{sh['n']}" if kind == "gemm" else None
                    if g is not None and g not in out:
                        out.append(g)
    return out


def _llm() -> list[str]:
    # Llama-3-8B (d 4096, 32 query / 8 KV heads of 128, FFN 14,336, vocabulary 128,256)
    shapes = ("4096x6144", "4096x4096", "4096x28672", "14336x4096")
    return [f"{m}x{s}" for m in (2048, 1, 16, 64) for s in shapes] + ["1x4096x128256", "16x4096x128256"]


SETS = {"h100": ("h100", lambda: ["4096x8192x57344", "4096x57344x8192", "8192x8192x8192", "4096x8192x7168",
                                  "1x8192x57344", "16x8192x8192"]),
        "llmcompass": ("a100", _llmcompass), "vidur": ("a100", _vidur), "llm": ("llm_ws", _llm)}


def solve(layer, acc, params: dict, ties: bool = True):
    """(best SearchResult, units listed, units run, wall s) of SALSA on ``layer`` under ``params``
    (``ties`` False: the loma rank without its tie tolerance). The spatial choice's cache is
    cleared first, so every rule pays for its own choice."""
    p = Problem.layer("salsa", layer, acc, objective="latency", params=params, seed=0, keep_seed=True)
    p = p.with_params(check_params(get_mapper("salsa").params, p.params)[0])
    saved = getattr(spatial, "TIE_RTOL", None), getattr(spatial, "TIE_CYCLES", None)
    spatial._CACHE.clear()
    if not ties:
        spatial.TIE_RTOL, spatial.TIE_CYCLES = 0.0, 0.0
    try:
        t = time.perf_counter()
        units = p.units()
        sol = p.solve(units, skip_by_floor=params.get("spatial_candidates") == "all")
        return sol.best, len(units), len(sol.results), time.perf_counter() - t
    finally:
        if saved[0] is not None:
            spatial.TIE_RTOL, spatial.TIE_CYCLES = saved


def bench(acc, gemm: str, rules: list[str]) -> dict[str, tuple[float, float, float]]:
    """Print one GEMM's table; return per rule (latency / the reference's, energy / the first
    rule's, wall s); the reference is ``all`` if run, else the best latency of the rules run."""
    m, k, n = (int(x) for x in gemm.lower().split("x"))
    layer = Layer(f"gemm_{gemm}", kind="matmul", B=m, C=k, K=n)
    floor = layer.macs / acc.pe_count
    res = {r: solve(layer, acc, RULES[r], ties=r != "loma_no_ties") for r in rules}
    ref = res["all"][0].latency_cycles if "all" in res else min(b.latency_cycles for b, *_ in res.values())
    e0 = res[rules[0]][0].energy_pj
    print(f"\n{gemm} on {acc.name}: compute floor {floor / (acc.clock_mhz * 1e3):.4f} ms")
    print(f"  {'rule':<13} {'x floor':>8} {'vs ref':>8} {'ms':>9} {'energy':>8} {'units':>7} {'run':>6} {'wall s':>7}"
          f"  unrolling")
    for r, (best, listed, ran, wall) in res.items():
        lat = best.latency_cycles
        print(f"  {r:<13} {lat / floor:8.4f} {lat / ref:8.4f} {lat / (acc.clock_mhz * 1e3):9.4f} "
              f"{best.energy_pj / e0:8.4f} {listed:7d} {ran:6d} {wall:7.3f}  {best.extra.get('spatial')}", flush=True)
    return {r: (best.latency_cycles / ref, best.energy_pj / e0, wall) for r, (best, _, _, wall) in res.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=None, choices=sorted(SETS),
                    help="a GEMM set (repeatable; default h100; module docstring)")
    ap.add_argument("--arch", default=None, help="with --gemm: loop-nest preset or TOML with a [spatial_hint]")
    ap.add_argument("--gemm", action="append", default=None, metavar="MxKxN",
                    help="a GEMM of M rows, reduction K, N columns (repeatable; needs --arch)")
    ap.add_argument("--rule", action="append", default=None, choices=list(RULES),
                    help="a rule to run (repeatable; default loma, utilization, probe, all)")
    ap.add_argument("--code", default=None, metavar="DIR",
                    help="run the code of this checkout (e.g. a git worktree of an older commit) with "
                         "--rule default: what its SALSA does by default, for per-GEMM times then and now")
    a = ap.parse_args(argv)
    if a.gemm and not a.arch:
        ap.error("--gemm needs --arch")
    rules = a.rule or ["loma", "utilization", "probe", "all"]
    jobs = [(a.arch, a.gemm)] if a.gemm else [(SETS[s][0], SETS[s][1]()) for s in (a.set or ["h100"])]
    out: dict[str, list[tuple[float, float, float]]] = {r: [] for r in rules}
    for arch, gemms in jobs:
        acc = load_accelerator(arch)
        solve(Layer("warm", kind="matmul", B=64, C=64, K=64), acc, RULES["loma"])
        for g in gemms:
            for r, v in bench(acc, g, rules).items():
                out[r].append(v)
    base = out.get("utilization", out[rules[0]])
    ref = "exhaustive" if "all" in rules else "best rule"
    print(f"\nsummary over {len(base)} GEMMs (latency / {ref}'s; energy / {rules[0]}'s; wall time / "
          f"{'utilization' if 'utilization' in out else rules[0]}'s, paired)")
    print(f"  {'rule':<13} {'worst':>7} {'mean':>7} {'within 3%':>10} {'energy':>15} {'wall s':>8} {'x base':>7} "
          f"{'max x base':>11}")
    for r, v in out.items():
        gaps = [g for g, _, _ in v]
        es = [e for _, e, _ in v]
        wall = sum(w for *_, w in v)
        worst_t = max(w / max(b, 1e-9) for (*_, w), (*_, b) in zip(v, base))
        print(f"  {r:<13} {max(gaps):7.4f} {sum(gaps) / len(gaps):7.4f} {sum(g <= 1.03 for g in gaps):>5}/{len(gaps):<4} "
              f"{min(es):7.4f}-{max(es):<7.4f} {wall:8.2f} {wall / sum(b for *_, b in base):7.2f} {worst_t:11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
