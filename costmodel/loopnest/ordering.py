"""The hot path: LOMA allocation + loop-nest cost of many loop orderings of one layer at once.

`OrderingEvaluator` fixes a layer, an accelerator and a spatial unrolling, decomposes the temporal
bounds into loop prime factors (LPFs; SALSA Sec. II-B) and evaluates orderings given as integer
arrays of LPF *type* ids, shape (n, n_loops), innermost loop first. For every ordering it performs
the bottom-up allocation of `costmodel.loopnest.allocation` and the cost model of
`costmodel.loopnest.reference`, in one kernel (`costmodel.loopnest.kernel`) fed with one table of
the evaluator's state (`costmodel.loopnest.tables`). Results equal
``reference.evaluate(layer, arch, allocate(layer, arch, spatial, loops))`` bit for bit
(``tests/costmodel/loopnest/test_kernel_fuzz.py`` fuzzes it on random accelerators and layers).

Backends, the same kernel source: "numba" (compiled, ``cache=True``; the default when numba is
installed and ``DSE_SWEEP_NO_NUMBA`` is not set) and "python" (the kernel interpreted, about 300x
slower; "numpy", the name of the vectorised NumPy path this replaced, is accepted as an alias).
The first numba call in a fresh environment compiles the kernel (about 10 s, one entry point);
later processes load it from numba's cache.

Speed: docs/salsa_loma.md (``python scripts/bench_costmodel.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .allocation import allocate
from .mapping import OPERANDS, Mapping, MappingError, SpatialMapping, prime_factors
from .tables import build_tables, views, workspace
from costmodel.workload import LOOP_DIMS

__all__ = ["OrderingEvaluator", "BatchCost", "default_backend", "BACKENDS"]

_OBJECTIVES = ("energy", "latency", "edp")
#: the backends: the compiled kernel and the same kernel interpreted
BACKENDS = ("numba", "python")
_ALIASES = {"numpy": "python"}


def _kernel(backend: str):
    """The kernel module of ``backend`` (imported on first use: numba's import and the cache load
    cost about 0.5 s)."""
    from . import kernel
    if backend == "numba":
        if not kernel.JIT:
            raise ValueError("backend 'numba' requested but numba is not installed or DSE_SWEEP_NO_NUMBA is set")
        return kernel
    return kernel.python_kernel()


def default_backend() -> str:
    """"numba" if the kernel is compiled (numba is installed and ``DSE_SWEEP_NO_NUMBA`` was not set
    when it was first imported) and ``DSE_SWEEP_NO_NUMBA`` is not set now, else "python"."""
    from . import kernel
    return "numba" if kernel.JIT and not kernel.numba_disabled() else "python"


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


def _loop_types(factors, tb) -> tuple[tuple, list[int]]:
    """Unique (dim, factor) loop types in order of first appearance and their multiplicities;
    checks that the factors multiply to the temporal bounds ``tb``."""
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
    return tuple(types), counts


class OrderingEvaluator:
    """Allocation + cost of loop orderings of one layer on one accelerator.

    Args:
        layer: `Layer`. arch: `Accelerator`.
        spatial: the spatial unrolling (None = ``arch.spatial``).
        factors: optional temporal loop multiset as (dim, factor) pairs (e.g. LOMA's lpf_limit
            merges factors into composites); default: the prime factors of each dim's temporal
            bound ceil(bound / spatial), dims in `LOOP_DIMS` order.
        even: even mappings only (see `costmodel.loopnest.allocation`).
        backend: "numba" (compiled kernel), "python" (the same kernel interpreted; alias "numpy")
            or None = `default_backend()`. Both give identical results.

    Attributes:
        types: tuple of the unique (dim, factor) loop types; ids index it.
        counts: (m,) int array, multiplicity of each type.
        n_loops: counts.sum().
        backend: the backend in use.
        compute_cycles: product of the temporal loop factors.

    Raises:
        MappingError: if ``factors`` do not multiply to the temporal bounds.
        ValueError: an unknown backend, or "numba" without numba.

    An evaluator keeps one workspace (`tables.workspace`) across calls, so its calls must not
    overlap: the compiled kernel holds the GIL for a whole call; with backend "python" give each
    thread its own evaluator.
    """

    def __init__(self, layer, arch, spatial: SpatialMapping | None = None, factors=None, even: bool = False,
                 backend: str | None = None):
        backend = default_backend() if backend is None else _ALIASES.get(backend, backend)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
        self._k = _kernel(backend)
        self.backend = backend
        self.layer, self.arch, self.even = layer, arch, even
        self.spatial = spatial
        sp0 = spatial if spatial is not None else arch.spatial
        fit = sp0.fit(layer)
        tb = sp0.temporal_bounds(layer)
        if factors is None:
            factors = [(d, p) for d in LOOP_DIMS for p in prime_factors(tb[d])]
        self.types, counts = _loop_types(factors, tb)
        self.counts = np.array(counts, dtype=np.int64)
        self.n_loops = int(self.counts.sum())
        self.tables = build_tables(layer, arch, fit, self.types, counts, even)
        self.compute_cycles = int(self.tables.par[0])
        self._args = self.tables.args()
        self._ws = (self.n_loops, len(arch.memories), self.tables.lv.shape[1])
        self._wi, self._wf = workspace(*self._ws)
        self._one = np.empty((4, 1))

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

    def _run(self, O_: np.ndarray, out: np.ndarray) -> None:
        bad = self._k.evaluate_batch(O_, *self._args, out, self._wi, self._wf)
        if bad >= 0:
            raise ValueError(f"ordering {bad} has a type id outside [0, {len(self.types)}): {O_[bad].tolist()}")

    def evaluate_one(self, ordering) -> tuple[float, float, float, bool]:
        """(energy_pj, latency_cycles, edp, valid) of one ordering: the path of SA chains.

        ``ordering``: sequence (list, tuple, 1-D array) of type ids. Identical to `evaluate`; inf
        costs and valid False where the allocation fails.

        Raises:
            ValueError: wrong length or a type id out of range.
        """
        a = np.asarray(ordering, dtype=np.int64)
        if a.ndim != 1 or a.shape[0] != self.n_loops:
            raise ValueError(f"ordering must have {self.n_loops} loops, got shape {a.shape}")
        out = self._one
        self._run(a.reshape(1, -1), out)
        e, la, d, v = out[:, 0].tolist()
        return e, la, d, v != 0.0

    def access_counts(self, ordering) -> dict | None:
        """The kernel's figures of one ordering, for checking it against the reference: None if no
        allocation fits, else {"boundaries": {op: per-level loop boundaries}, "reads" / "writes":
        {(op, memory name): word accesses (real data)}, "stall_cycles": {memory name: cycles}}."""
        if not self.evaluate_one(ordering)[3]:
            return None
        v = views(self._wi, self._wf, *self._ws)
        bnd, rw, st = v[10], v[-2], v[-1]
        res: dict = {"boundaries": {}, "reads": {}, "writes": {}}
        for k, op in enumerate(OPERANDS):
            levels = self.arch.levels(op)
            res["boundaries"][op] = tuple(int(x) for x in bnd[k, :len(levels)])
            for li, m in enumerate(levels):
                res["reads"][(op, m.name)] = float(rw[k, li, 0])
                res["writes"][(op, m.name)] = float(rw[k, li, 1])
        res["stall_cycles"] = {m.name: float(s) for m, s in zip(self.arch.memories, st)}
        return res

    def evaluate(self, orderings) -> BatchCost:
        """Costs of orderings: int array (n, n_loops) of type ids, innermost first.

        Returns `BatchCost` with arrays of shape (n,). Rows need not be checked permutations of
        the multiset (that is the caller's contract); an empty batch gives empty arrays. Rows that
        share leading loops with the row before are evaluated incrementally (`kernel`).

        Raises:
            ValueError: wrong shape or a type id out of range.
        """
        O_ = np.asarray(orderings)
        if O_.ndim == 1:
            O_ = O_[None, :]
        n, L = O_.shape
        if L != self.n_loops:
            raise ValueError(f"orderings must have shape (n, {self.n_loops}), got {O_.shape}")
        if n == 0:
            e = np.empty(0)
            return BatchCost(e, e.copy(), e.copy(), np.empty(0, dtype=bool))
        out = np.empty((4, n))
        self._run(np.ascontiguousarray(O_, dtype=np.int64), out)
        return BatchCost(out[0], out[1], out[2], out[3] != 0.0)
