"""The hot path: LOMA allocation + loop-nest cost of many loop orderings of one layer at once.

`OrderingEvaluator` fixes a layer, an accelerator and a spatial unrolling, decomposes the temporal
bounds into loop prime factors (LPFs; SALSA Sec. II-B) and evaluates orderings given as integer
arrays of LPF *type* ids, shape (n, n_loops), innermost loop first. For every ordering it performs
the bottom-up allocation of `costmodel.loopnest.allocation` and the cost model of `costmodel.loopnest.reference`,
vectorised with NumPy over the n orderings:

* per-dimension cumulative products along the loop axis give every prefix's tile (footprint) at
  once; LOMA's candidates per memory are the prefixes up to the first overflow, the best
  (combination of) prefix(es) is an argmin over a masked cost array (a 2-D grid per ordering for a
  memory shared by two operands);
* the stationarity run above a boundary comes from a "next relevant loop" index array
  (reverse running minimum), so fills = total / cumprod[next relevant];
* counts are exact int64; energy is summed in the reference's order, so results equal
  `loopnest.evaluate(layer, arch, allocate(layer, arch, spatial, loops))` bit for bit (tests
  check 1e-12 relative).

Two backends give identical results (``tests/costmodel/loopnest/test_ordering.py`` checks it on random orderings of
several layers and presets): "numba" (default when numba is installed; ``DSE_SWEEP_NO_NUMBA=1``
or ``backend="numpy"`` turns it off), a compiled kernel (`costmodel.loopnest._ordering_numba`) looping over
the orderings with the same integer arithmetic and the same float summation order, fed with small
per-evaluator tables; "numpy", vectorised NumPy for batches (`costmodel.loopnest._ordering_batch`)
and a pure Python `evaluate_one` (`costmodel.loopnest._ordering_scalar`). The first numba call in
a fresh environment compiles the kernel (~8-10 s, one entry point, ``cache=True``); later
processes load it from the cache (import of numba + load ~0.7 s).

Speed (one core, ``scripts/bench_costmodel.py`` on the development machine, eyeriss_like, 17-18
LPFs: ResNet-34 3x3 K=C=256 OY=OX=14, and three other layers):

* numba: ``evaluate`` ~300,000-350,000 orderings/s at batch 4096 (~3 us per ordering), ~290,000/s
  at batch 64, ~110,000/s at batch 1; ``evaluate_one`` ~8 us per call incl. Python overhead, a
  1000-iteration SA-like loop ~0.01 s. Targets (200,000/s; SA run of 1000 iterations <= 0.1 s) met.
* numpy: ~60,000/s at batch 4096, ~30,000/s at batch 64 (bound by ~150 passes over (n, n_loops+1)
  arrays); ``evaluate_one`` (pure Python, also used by ``evaluate`` for n <= 8) ~0.13-0.16 ms,
  a 1000-iteration chain ~0.17-0.20 s. Most of it is LOMA's joint choice for the memory shared
  by I and O (sram_1M: ~80 prefix pairs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ._ordering_batch import evaluate_numpy
from ._ordering_scalar import evaluate_one_py
from .allocation import allocate
from .reference import _Nest, mac_energy, operand_bits
from .window import WINDOW, window_steps
from .mapping import OPERANDS, RELEVANT, Mapping, MappingError, SpatialMapping, prime_factors
from costmodel.workload import LOOP_DIMS

__all__ = ["OrderingEvaluator", "BatchCost", "default_backend"]

_OBJECTIVES = ("energy", "latency", "edp")
#: batches up to this size go through the scalar path (faster than NumPy for tiny batches)
_SCALAR_MAX = 8
_BACKENDS = ("numba", "numpy")
_NB_UNSET = object()
_nb_module = _NB_UNSET


def _numba_kernels():
    """The compiled kernels (`costmodel.loopnest._ordering_numba`), or None if numba is not installed.

    Imported on first use: importing numba costs ~0.5 s, loading the cached kernels a bit more."""
    global _nb_module
    if _nb_module is _NB_UNSET:
        try:
            from . import _ordering_numba as _batch_numba
        except ImportError:
            _batch_numba = None
        _nb_module = _batch_numba
    return _nb_module


def default_backend() -> str:
    """"numba" if numba is importable and ``DSE_SWEEP_NO_NUMBA`` is not set (to 1/true/yes), else
    "numpy"."""
    if os.environ.get("DSE_SWEEP_NO_NUMBA", "").strip().lower() in ("1", "true", "yes", "on"):
        return "numpy"
    return "numba" if _numba_kernels() is not None else "numpy"


@dataclass
class BatchCost:
    """Costs of n orderings: arrays of shape (n,). Invalid orderings have inf costs, valid False."""

    energy_pj: np.ndarray
    latency_cycles: np.ndarray
    edp: np.ndarray
    valid: np.ndarray

    def objective(self, objective: str) -> np.ndarray:
        if objective == "energy":
            return self.energy_pj
        if objective == "latency":
            return self.latency_cycles
        if objective == "edp":
            return self.edp
        raise ValueError(f"objective must be one of {_OBJECTIVES}, got {objective!r}")


class OrderingEvaluator:
    """Allocation + cost of loop orderings of one layer on one accelerator.

    Args:
        layer: `Layer`. arch: `Accelerator`.
        spatial: the spatial unrolling (None = ``arch.spatial``).
        factors: optional temporal loop multiset as (dim, factor) pairs (e.g. LOMA's lpf_limit
            merges factors into composites); default: the prime factors of each dim's temporal
            bound ceil(bound / spatial), dims in `LOOP_DIMS` order.
        even: even mappings only (see `costmodel.loopnest.allocation`).
        backend: "numba" (compiled kernel, one loop per ordering), "numpy" (vectorised NumPy for
            batches, pure Python for `evaluate_one`) or None = `default_backend()` (numba unless it
            is missing or ``DSE_SWEEP_NO_NUMBA=1``). Both give identical results.

    Attributes:
        types: tuple of the unique (dim, factor) loop types; ids index it.
        counts: (m,) int array, multiplicity of each type.
        n_loops: counts.sum().
        backend: the backend in use.

    Raises:
        MappingError: if ``factors`` do not multiply to the temporal bounds.
    """

    def __init__(self, layer, arch, spatial: SpatialMapping | None = None, factors=None, even: bool = False,
                 backend: str | None = None):
        if backend is None:
            backend = default_backend()
        elif backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS} or None, got {backend!r}")
        elif backend == "numba" and _numba_kernels() is None:
            raise ValueError("backend 'numba' requested but numba is not installed")
        self.backend = backend
        self.layer, self.arch, self.even = layer, arch, even
        self.spatial = spatial
        sp0 = spatial if spatial is not None else arch.spatial
        self._fit = sp0.fit(layer)
        tb = sp0.temporal_bounds(layer)
        if factors is None:
            factors = [(d, p) for d in LOOP_DIMS for p in prime_factors(tb[d])]
        factors = [(str(d), int(f)) for d, f in factors if int(f) != 1]
        prod = {d: 1 for d in LOOP_DIMS}
        for d, f in factors:
            if d not in prod:
                raise MappingError(f"factors: unknown loop dimension {d!r}")
            prod[d] *= f
        for d in LOOP_DIMS:
            if prod[d] != tb[d]:
                raise MappingError(f"factors of {d} multiply to {prod[d]}, expected the temporal bound {tb[d]}")
        types: list[tuple[str, int]] = []
        counts: list[int] = []
        for t in factors:
            if t in types:
                counts[types.index(t)] += 1
            else:
                types.append(t)
                counts.append(1)
        self.types = tuple(types)
        self.counts = np.array(counts, dtype=np.int64)
        self.n_loops = int(self.counts.sum())
        self._prepare()

    # ------------------------------------------------------------------ set-up
    def _prepare(self) -> None:
        layer, arch = self.layer, self.arch
        nest = _Nest(layer, arch, self._fit, ())
        self._nest = nest
        self.bits = operand_bits(layer, arch)
        f = np.array([t[1] for t in self.types], dtype=np.int64)
        dims = [t[0] for t in self.types]
        self._f = f
        one = np.ones_like(f)

        def fac(mask):
            return np.where(np.array(mask, dtype=bool), f, one) if len(f) else f

        self._rel = {op: np.array([d in RELEVANT[op] for d in dims], dtype=bool) for op in OPERANDS}
        self._fac = {
            "W": fac([d in RELEVANT["W"] for d in dims]),
            "O": fac([d in RELEVANT["O"] for d in dims]),
            "Oirr": fac([d not in RELEVANT["O"] for d in dims]),
            "Ibcg": fac([d in ("B", "C", "G") for d in dims]),
            "OY": fac([d == "OY" for d in dims]), "FY": fac([d == "FY" for d in dims]),
            "OX": fac([d == "OX" for d in dims]), "FX": fac([d == "FX" for d in dims]),
        }
        self._total = int(np.prod(f ** self.counts)) if len(f) else 1
        self.compute_cycles = self._total
        self.mac_energy = mac_energy(layer, arch)
        # per operand and level: spatial extents inside one instance, instance counts, word etc.
        self._lv = {}
        for op in OPERANDS:
            levels = arch.levels(op)
            info = []
            for i, m in enumerate(levels):
                ext = nest.spatial_ext([a for a in nest.all_dims if a not in m.private_to])
                info.append(dict(mem=m, ext=ext, top=(i == len(levels) - 1),
                                 unreduced=nest.unreduced(m.private_to),
                                 n=nest.instances(m.private_to)))
            self._lv[op] = info
        # boundaries: (op, lo) for lo in -1..m-2
        self._bd = {}
        for op in OPERANDS:
            levels = arch.levels(op)
            for lo in range(-1, len(levels) - 1):
                up = levels[lo + 1]
                lo_scope = nest.all_dims if lo < 0 else levels[lo].private_to
                # I's padded window dims unrolled inside the moved tile: fractional window
                wf = nest.window_frac(op, lo_scope)
                self._bd[(op, lo)] = dict(
                    g=nest.group(op, [a for a in lo_scope if a not in up.private_to]),
                    n_up=nest.instances(up.private_to), n_lo=nest.instances(lo_scope),
                    fin_ok=not nest.unreduced(up.private_to),
                    s_up=nest.real_scale(op, up.private_to, wf), s_lo=nest.real_scale(op, lo_scope, wf),
                    win=tuple(wf.get(d, 1.0) for d in WINDOW) if wf else None,
                    # no accumulator in the MAC: O visits the lowest O level at every MAC
                    every=(op == "O" and lo < 0 and arch.accumulator_pj is None))
        self._mem_index = {m.name: i for i, m in enumerate(arch.memories)}
        # tables of the scalar path (evaluate_one): Python lists and tuples
        sc = {k: v.tolist() for k, v in self._fac.items()}
        sc["f"] = f.tolist()
        sc["rel"] = {op: self._rel[op].tolist() for op in OPERANDS}
        lv = {}
        for op in OPERANDS:
            rows_ = []
            for li in self._lv[op]:
                g = li["ext"].get
                if op == "W":
                    rows_.append((g("K", 1) * g("C", 1) * g("FY", 1) * g("FX", 1) * g("G", 1),))
                elif op == "O":
                    rows_.append((g("B", 1) * g("K", 1) * g("OY", 1) * g("OX", 1) * g("G", 1), li["unreduced"]))
                else:
                    rows_.append((g("B", 1) * g("C", 1) * g("G", 1), g("OY", 1), g("FY", 1), g("OX", 1), g("FX", 1)))
            lv[op] = rows_
        sc["lv"] = lv
        tops = {op: arch.levels(op)[-1].name for op in OPERANDS}
        sc["mems"] = [(m, tuple(m.operands), {op: tops[op] == m.name for op in m.operands}) for m in arch.memories]
        sc["info"] = {op: [(li["mem"], self._mem_index[li["mem"].name], li["mem"].word_bits) for li in self._lv[op]]
                      for op in OPERANDS}
        sc["bd"] = {k: (v["g"], v["n_up"], v["n_lo"], v["fin_ok"], v["s_up"], v["s_lo"], v["every"], v["win"])
                    for k, v in self._bd.items()}
        sc["mem_inst"] = [(m, nest.instances(m.private_to)) for m in arch.memories]
        self._scalar = sc
        self._nb = None
        if self.backend == "numba":
            self._nb = _numba_kernels()
            self._nbt = self._numba_tables()

    def _numba_tables(self) -> tuple:
        """The tables of the compiled kernels (layouts in `costmodel.loopnest._ordering_numba`)."""
        nb, sc, arch, layer = self._nb, self._scalar, self.arch, self.layer
        m = len(self.types)
        ft = np.zeros((nb.N_T, m), dtype=np.int64)
        for r, key in ((nb.T_F, None), (nb.T_W, "W"), (nb.T_O, "O"), (nb.T_OIRR, "Oirr"), (nb.T_IBCG, "Ibcg"),
                       (nb.T_OY, "OY"), (nb.T_FY, "FY"), (nb.T_OX, "OX"), (nb.T_FX, "FX")):
            ft[r] = self._f if key is None else self._fac[key]
        for k, op in enumerate(OPERANDS):
            ft[nb.T_REL + k] = self._rel[op]
        nlev = [len(arch.levels(op)) for op in OPERANDS]
        lv = np.zeros((3, max(nlev), nb.N_LV), dtype=np.int64)
        lvf = np.ones((3, max(nlev), nb.N_LVF), dtype=np.float64)
        for k, op in enumerate(OPERANDS):
            for li, (mem, mi, word) in enumerate(sc["info"][op]):
                row = lv[k, li]
                row[nb.LV_MEM], row[nb.LV_WORD] = mi, word
                row[nb.LV_TOP] = self._lv[op][li]["top"]
                consts = sc["lv"][op][li]
                row[nb.LV_K0:nb.LV_K0 + len(consts)] = [int(c) for c in consts]
                g, n_up, n_lo, fin_ok, s_up, s_lo, every, wa = sc["bd"][(op, li - 1)]
                row[nb.LV_G], row[nb.LV_NUP], row[nb.LV_NLO], row[nb.LV_FINOK] = g, n_up, n_lo, fin_ok
                row[nb.LV_EVERY] = every
                row[nb.LV_WIN] = wa is not None
                lvf[k, li, nb.LVF_SUP], lvf[k, li, nb.LVF_SLO] = s_up, s_lo
                if wa is not None:
                    lvf[k, li, nb.LVF_AOY:nb.LVF_AFX + 1] = wa
        mems = arch.memories
        mem = np.zeros((len(mems), nb.N_M), dtype=np.int64)
        memf = np.zeros((len(mems), nb.N_MF), dtype=np.float64)
        for mi, (mm, ni) in enumerate(sc["mem_inst"]):
            row = mem[mi]
            row[nb.M_SIZE] = -1 if mm.size_bits is None else mm.size_bits
            row[nb.M_NOPS] = len(mm.operands)
            for j, op in enumerate(mm.operands):
                row[nb.M_OP0 + j] = OPERANDS.index(op)
                row[nb.M_LI0 + j] = [x.name for x in arch.levels(op)].index(mm.name)
            row[nb.M_WORD], row[nb.M_SHARED], row[nb.M_NI] = mm.word_bits, bool(mm.shared_port), ni
            row[nb.M_PJINT] = isinstance(mm.read_pj, int) + 2 * isinstance(mm.write_pj, int)
            memf[mi] = (mm.read_pj, mm.write_pj, mm.read_bw, mm.write_bw)
        bits = self.bits
        par = np.zeros(nb.N_P, dtype=np.int64)
        par[:nb.P_NL0] = (self._total, bits["W"], bits["I"], bits["O"], bits["O_final"],
                          *window_steps(layer), int(bool(self.even)))
        par[nb.P_NL0:nb.P_NL0 + 3] = nlev
        return ft, lv, lvf, mem, memf, par, float(self.mac_energy)

    # ------------------------------------------------------------------ helpers
    def loops(self, ordering) -> tuple[tuple[str, int], ...]:
        """The temporal loops (innermost first) of one ordering of type ids."""
        return tuple(self.types[int(i)] for i in np.asarray(ordering).ravel())

    def mapping(self, ordering) -> Mapping:
        """The full allocated mapping of one ordering (`costmodel.loopnest.allocation.allocate`).

        Raises MappingError if the ordering has no valid allocation."""
        return allocate(self.layer, self.arch, self.spatial, self.loops(ordering), even=self.even)

    def objective(self, orderings, objective: str = "energy") -> np.ndarray:
        """(n,) float: "energy" (pJ) | "latency" (cycles) | "edp"; +inf where invalid."""
        if objective not in _OBJECTIVES:
            raise ValueError(f"objective must be one of {_OBJECTIVES}, got {objective!r}")
        return self.evaluate(orderings).objective(objective)

    def _cum(self, key, F_ids):
        """(n, L+1) cumulative products of the per-type factor table ``key`` along the ordering."""
        x = self._fac[key][F_ids]
        n, L = x.shape
        out = np.empty((n, L + 1), dtype=np.int64)
        out[:, 0] = 1
        np.cumprod(x, axis=1, out=out[:, 1:])
        return out

    def evaluate_one(self, ordering) -> tuple[float, float, float, bool]:
        """(energy_pj, latency_cycles, edp, valid) of one ordering: the scalar path for SA chains.

        ``ordering``: sequence (list, tuple, 1-D array) of type ids. The same arithmetic as
        `evaluate` (compiled with numba, else in Python integers / floats), so the results are
        identical; inf costs and valid False where the allocation fails.
        """
        nb = self._nb
        if nb is None:
            return self._evaluate_one_py(ordering)
        a = np.asarray(ordering, dtype=np.int64)
        if a.ndim != 1 or a.shape[0] != self.n_loops:
            raise ValueError(f"ordering must have {self.n_loops} loops, got shape {a.shape}")
        out = np.empty((4, 1))
        if nb.evaluate_batch(a.reshape(1, -1), *self._nbt, out) >= 0:
            raise ValueError(f"ordering has a type id outside [0, {len(self.types)}): {a.tolist()}")
        e, la, d, v = out[:, 0].tolist()
        return e, la, d, v != 0.0

    def _evaluate_one_py(self, ordering) -> tuple[float, float, float, bool]:
        """`evaluate_one` in pure Python (the backend "numpy"); see `costmodel.loopnest._ordering_scalar`."""
        return evaluate_one_py(self, ordering)

    # ------------------------------------------------------------------ the batch path
    def evaluate(self, orderings) -> BatchCost:
        """Costs of orderings: int array (n, n_loops) of type ids, innermost first.

        Returns `BatchCost` with arrays of shape (n,). Rows need not be checked permutations of
        the multiset (that is the caller's contract); an empty batch gives empty arrays.
        """
        O_ = np.asarray(orderings, dtype=np.intp)
        if O_.ndim == 1:
            O_ = O_[None, :]
        n, L = O_.shape
        if L != self.n_loops:
            raise ValueError(f"orderings must have shape (n, {self.n_loops}), got {O_.shape}")
        if n == 0:
            e = np.empty(0)
            return BatchCost(e, e.copy(), e.copy(), np.empty(0, dtype=bool))
        if self._nb is not None:
            out = np.empty((4, n))
            bad = self._nb.evaluate_batch(np.ascontiguousarray(O_, dtype=np.int64), *self._nbt, out)
            if bad >= 0:
                raise ValueError(f"row {bad} has a type id outside [0, {len(self.types)}): {O_[bad].tolist()}")
            return BatchCost(out[0], out[1], out[2], out[3] != 0.0)
        if n <= _SCALAR_MAX:
            res = [self.evaluate_one(row) for row in O_]
            en, la, ed, va = (np.array(x) for x in zip(*res))
            return BatchCost(en.astype(float), la.astype(float), ed.astype(float), va.astype(bool))
        return BatchCost(*evaluate_numpy(self, O_))
