"""Cost tables of many designs of one chip from a few mapping searches: every layer mapped on the
chip's *reference* designs and re-costed on each design (``[serving] mappings = "shared"``).

A serving architecture search prices every iteration part of every design (a Llama-3-8B table
holds 230-420 unique layers: 10-50 s of mapping on one core per design), but designs that differ
only in their DRAM (kind, units: bandwidth, energy per bit, capacity), their clock (which sets the
DRAM's bits per cycle), their vector unit or their launch cost have the same array and on-chip
memories: the same *chip* (`chip_view`). For those, each layer is mapped once on each reference
design of the chip (`sweep.engine.serving_tasks.reference_designs`: the chip with the slowest and
with the fastest DRAM of the grid, in bits per cycle), and every design of the chip takes, per
layer, the better of the reference mappings *re-costed on itself* by the loop-nest model
(`costmodel.loopnest.reference.evaluate`): its own DRAM's transfers, stalls and energy, its own
clock. The vector operations, the launches, the collectives and the KV cache stay each design's own
(`sweep.serving.table_build.build_cost_table`).

What it is not: a design's own search. A mapping chosen on one DRAM may be beaten on another; the
two references bracket the grid's bandwidths so that a traffic-lean mapping (found where DRAM is
scarce) and a stall-lean one (found where it is plentiful) are both tried. Measured against each
design mapping its own table (`scripts/serving_shared_mappings.py`, numbers in docs/serving.md).
A design that is itself a reference gets the better of its own mapping and the other reference's,
so it is at least as fast per layer as mapping alone (under the latency objective).

Mappings found on a reference, and their figures re-costed on a design (designs of one
`mapper_view`, differing only in their vector unit say, share them), are kept per process
(`REFERENCE_KEPT` each, least recently used dropped), keyed by what determines them (the reference's `mapper_view`, the layer, the mapper, its
parameters, the objective, the seed), so the figures do not depend on which process or task found
them.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Sequence

from sweep.common.ids import stable_hash

__all__ = ["SharedMappings", "REFERENCE_KEPT", "reference_mapping", "clear_kept"]

#: How many reference mappings a process keeps: a chip's two references x 420 layers of a
#: Llama-3-8B table at two token budgets is about 1,700.
REFERENCE_KEPT = 8192

_KEPT: "OrderedDict[str, dict]" = OrderedDict()
#: Re-costed figures by (design's `mapper_view`, references, layer, how): designs of one view (they
#: differ in their vector unit, say) get the same figures, so each is worked out once per process.
_RECOSTED: "OrderedDict[tuple, dict]" = OrderedDict()

#: Which figure decides between two mappings, per objective, then the others (ties).
_ORDER = {"latency": ("latency_cycles", "energy_pj"), "energy": ("energy_pj", "latency_cycles"),
          "edp": ("edp", "latency_cycles")}


def clear_kept() -> None:
    """Forget every reference mapping and re-costed figure this process holds."""
    _KEPT.clear()
    _RECOSTED.clear()


def reference_mapping(layer, ref, view: str, how: tuple) -> dict[str, Any]:
    """`sweep.commands.map_eval.map_layer`'s result of ``layer`` on reference accelerator ``ref``
    (its `mapper_view` ``view``; ``how`` = (mapper, objective, seed, params)), mapped once per
    process (`REFERENCE_KEPT`)."""
    mapper, objective, seed, params = how
    key = stable_hash({"view": view, "layer": layer.hash_fields(), "mapper": mapper, "objective": objective,
                       "seed": seed, "params": params or {}}, 32)
    hit = _KEPT.get(key)
    if hit is not None:
        _KEPT.move_to_end(key)
        return hit
    from sweep.commands.map_eval import map_layer
    res = map_layer(layer, ref, mapper, objective, seed, params)
    _KEPT[key] = res
    while len(_KEPT) > REFERENCE_KEPT:
        _KEPT.popitem(last=False)
    return res


class SharedMappings:
    """A layer cache for `sweep.commands.map_eval.map_network` (``cache.get(layer)``,
    ``cache[layer] = res``) whose figures on ``arch`` come from the reference mappings (module
    docstring).

    ``get(layer)`` returns `map_layer`'s keys: ``energy_pj`` (pJ), ``latency_cycles`` (cycles of
    ``arch``), ``edp``, ``value`` (the objective's figure) of the best reference mapping re-costed
    on ``arch``, the mapping itself (``mapping``, ``loop_nest`` as found on the reference), the
    search's ``evaluations`` and ``engine``, and ``reference``: the name of the accelerator the
    mapping was found on. A layer no reference mapping runs on ``arch`` (none valid) is mapped on
    ``arch`` itself (``reference`` = its own name).

    Args:
        arch: the design (a loop-nest `Accelerator` of the references' chip).
        refs: the reference accelerators (one or two).
        mapper, objective, seed, params: how the references map (as `sweep map`).
    """

    def __init__(self, arch, refs: Sequence[Any], mapper: str, objective: str, seed: int,
                 params: dict | None = None) -> None:
        from sweep.engine.design_tasks import mapper_view
        if not refs:
            raise ValueError("SharedMappings needs at least one reference accelerator")
        self.arch = arch
        self.refs = tuple(refs)
        self.views = tuple(mapper_view(r) for r in self.refs)
        self.how = (mapper, objective, seed, params)
        self._key = (mapper_view(arch), self.views, mapper, objective, seed, repr(sorted((params or {}).items())))
        self.order = _ORDER.get(objective, _ORDER["latency"])
        self._got: dict = {}

    def get(self, layer, default=None) -> dict[str, Any]:
        hit = self._got.get(layer)
        if hit is not None:
            return hit
        key = (*self._key, layer)
        hit = _RECOSTED.get(key)
        if hit is not None:
            _RECOSTED.move_to_end(key)
            self._got[layer] = hit
            return hit
        from costmodel.loopnest.mapping import Mapping
        from costmodel.loopnest.reference import evaluate
        t0 = time.perf_counter()
        best = None
        for ref, view in zip(self.refs, self.views):
            res = reference_mapping(layer, ref, view, self.how)
            if res.get("status") != "ok" or not isinstance(res.get("mapping"), dict):
                continue
            rep = evaluate(layer, self.arch, Mapping.from_dict(res["mapping"]))
            if not rep.valid:
                continue
            figs = {"energy_pj": rep.energy_pj, "latency_cycles": rep.latency_cycles, "edp": rep.edp}
            cand = {**res, **figs, "value": figs[self.order[0]], "reference": ref.name}
            if best is None or tuple(cand[k] for k in self.order) < tuple(best[k] for k in self.order):
                best = cand
        if best is None:
            from sweep.commands.map_eval import map_layer
            best = {**map_layer(layer, self.arch, *self.how), "reference": self.arch.name}
        best["wall_s"] = time.perf_counter() - t0
        self._got[layer] = best
        _RECOSTED[key] = best
        while len(_RECOSTED) > REFERENCE_KEPT:
            _RECOSTED.popitem(last=False)
        return best

    def __setitem__(self, layer, res: dict[str, Any]) -> None:
        self._got[layer] = res

    def __contains__(self, layer) -> bool:
        return layer in self._got

    def __len__(self) -> int:
        return len(self._got)
