"""Memory energy and area as functions of memory size and word width; the area of a design.

Used by architecture search (`costmodel.loopnest.template`): a memory of a template accelerator
is *scaled* to a new capacity and/or word width, its per-access energies following a physical
model **anchored at the template's own values** (the template's energies come back exactly at
its own size and width).

Memory classes (`memory_class`), decided by the **template** memory (the one being scaled):

* ``"dram"``: ``size_bits is None`` (unbounded, off chip). Energy does not depend on a size;
  area 0.
* ``"sram"``: 4 KiB <= template size <= 1024 KiB (the CACTI table, extended to 1 MiB below). A
  template SRAM above 1 MiB is also ``"sram"`` but its size may not change (PhysicsRangeError);
  it may still be used unchanged, or with another word width (same energy per bit).
* ``"regfile"``: template size < 4 KiB.

Energy model of one access of one word (``word_bits`` wide), relative to the template:

* SRAM: ``e_bit(S) * word_bits`` pJ with ``e_bit`` the CACTI-projected 65 nm energy per bit at S
  KiB (`costmodel.tech.deepopt65.sram_energy_table`, file
  ``costmodel/data/sram_energy_pj_per_bit.csv``, DeepOpt authors' data, integer sizes 4..512
  KiB), linearly interpolated between tabulated sizes (`sram_pj_per_bit`). Above the table, up
  to 1 MiB (eyeriss_like's global buffer is 1 MiB), the energy per bit continues from the 512 KiB
  value with the square root of capacity, as in Horowitz's data below (20 pJ at 32 KB to 100 pJ
  at 1 MB per 64-bit read). Valid for 4 <= S <= 1024 KiB.
* Register file: proportional to ``word_bits * sqrt(size_bits)``. Source: M. Horowitz,
  "Computing's energy problem (and what we can do about it)", ISSCC 2014: 64-bit SRAM reads cost
  about 10 pJ at 8 KB, 20 pJ at 32 KB and 100 pJ at 1 MB, i.e. energy grows with the square root
  of capacity. Valid from one word (``size_bits >= word_bits``) up to, excluding, 4 KiB (32768
  bits).
* DRAM: proportional to ``word_bits`` (a constant energy per bit, as the presets' DRAM energies
  are written: pJ/bit x word_bits); never depends on a size.

Side by side with a peer: ZigZag 3.9.1's HardwareOptimizerStage (``zigzag/stages/
hardware_opt_stages.py``) prices its L1 at 95, 104, 118, 132, 147 pJ per 64-byte read for 32, 64,
128, 256, 512 KiB: x1.55 over 16x the capacity. The CACTI table here grows x5.84 per bit over the
same sizes (x1.64, 2.45, 4.31, 5.84; the square-root law gives x4). The table models one unbanked
SRAM (DeepOpt's data), ZigZag's figures a banked one with a fixed 64-byte port; with ZigZag's
numbers large buffers cost relatively less, and an architecture search favours them more.

**CACTI 22 nm** (an accelerator with ``tech = "cacti22"``, e.g. the LLM template ``llm_ws``): an
SRAM (template size >= 4 KiB) is priced absolutely, not anchored: ``read_pj`` / ``write_pj`` =
CACTI's energy per bit at the new capacity (`costmodel.tech.sram`, CACTI 7.0, 22 nm, one bank,
64-bit port; log-log interpolated) x ``word_bits`` (`cacti_access_pj`), valid from 4 KiB to 128 MiB;
its area is CACTI's; a register file keeps the anchored square-root rule and takes the 4 KiB SRAM's
area per byte; the PE area is DeepOpt's scaled by (22/65)^2 (`costmodel.tech.PE_AREA_SCALE`, ideal
scaling: our assumption); a DRAM of a kind (``acc.dram``) adds its interface's (PHY) area
(`costmodel.tech.dram`). Existing presets name no ``tech``: their rows do not change.

Scaling rule: ``new_pj = template_pj * model(S_new, w_new) / model(S_tmpl, w_tmpl)`` for both
read_pj and write_pj, computed as (size ratio) x (width ratio) so that an unchanged size or width
contributes a factor of exactly 1.0. Port bandwidths (read_bw, write_bw, bits per cycle) are
multiplied by ``w_new / w_tmpl``.

Area (mm^2): every on-chip memory costs ``A_SRAM_UM2_PER_BYTE`` = 32.5457 um^2 per byte of
capacity per instance (DeepOpt's TSMC 65 nm memory-compiler density,
`costmodel.tech.deepopt65`). Register files built from flip-flops are larger per bit than a
compiled SRAM, so the register-file area is a lower bound. Instances = product of the array dims
the memory is ``private_to``; DRAM is off chip (0). Each MAC/PE costs ``A_PE_UM2`` = 7405.95 um^2
(DeepOpt: 8-bit multiplier + 32-bit adder + registers; `costmodel.tech.deepopt65`).
"""

from __future__ import annotations

import math
import numbers
from bisect import bisect_left
from dataclasses import replace
from typing import cast
from functools import lru_cache

from costmodel.tech import PE_AREA_SCALE, TECHS
from costmodel.tech.deepopt65 import A_PE_UM2, A_SRAM_UM2_PER_BYTE, sram_energy_table

from .arch import Accelerator, MemoryLevel

__all__ = ["PhysicsRangeError", "TooSmallForWord", "SRAM_MIN_KIB", "SRAM_TABLE_MAX_KIB", "SRAM_MAX_KIB",
           "REGFILE_MAX_BITS",
           "memory_class", "sram_pj_per_bit", "check_size", "energy_ratio", "scale_memory",
           "memory_instances", "memory_area_mm2", "design_area_mm2", "cacti_access_pj", "TECHS", "PE_AREA_SCALE"]

#: Smallest SRAM of the CACTI table, KiB; largest SRAM of the model (the table ends at
#: `SRAM_TABLE_MAX_KIB`; above it the square-root continuation), KiB.
SRAM_MIN_KIB: int = 4
SRAM_TABLE_MAX_KIB: int = 512
SRAM_MAX_KIB: int = 1024
#: Register files are smaller than this many bits (4 KiB); the SRAM model starts here.
REGFILE_MAX_BITS: int = SRAM_MIN_KIB * 8192
_SRAM_MAX_BITS: int = SRAM_MAX_KIB * 8192


class PhysicsRangeError(ValueError):
    """A memory size or word width outside the range of the physics model."""


class TooSmallForWord(ValueError):
    """A memory smaller than one word (size_bits < word_bits): an invalid design point."""


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[float, ...], tuple[float, ...]]:
    sizes, energy = sram_energy_table()
    return tuple(float(s) for s in sizes), tuple(float(e) for e in energy)


def sram_pj_per_bit(kib: float) -> float:
    """CACTI 65 nm SRAM access energy per bit (pJ/bit) of an SRAM of ``kib`` KiB.

    Linear interpolation between the tabulated integer sizes (exact table value at a tabulated
    size). Source: ``costmodel/data/sram_energy_pj_per_bit.csv`` (DeepOpt authors' data). Between
    512 KiB and 1 MiB: the 512 KiB value times sqrt(kib / 512) (Horowitz, ISSCC 2014).

    Raises:
        PhysicsRangeError: ``kib`` outside 4..1024 KiB.
    """
    sizes, energy = _table()
    if sizes[-1] < kib <= SRAM_MAX_KIB:
        return energy[-1] * math.sqrt(kib / sizes[-1])
    if not (sizes[0] <= kib <= sizes[-1]):   # also rejects NaN
        raise PhysicsRangeError(f"SRAM size {kib:g} KiB is outside the SRAM model's range "
                                f"{sizes[0]:g}..{SRAM_MAX_KIB} KiB (CACTI table to {sizes[-1]:g} KiB, "
                                f"square-root continuation above)")
    j = bisect_left(sizes, kib)
    if sizes[j] == kib:
        return energy[j]
    s0, s1, e0, e1 = sizes[j - 1], sizes[j], energy[j - 1], energy[j]
    return e0 + (e1 - e0) * (kib - s0) / (s1 - s0)


def memory_class(mem: MemoryLevel) -> str:
    """"dram" (unbounded), "sram" (template size >= 4 KiB) or "regfile" (< 4 KiB)."""
    if mem.size_bits is None:
        return "dram"
    return "sram" if mem.size_bits >= REGFILE_MAX_BITS else "regfile"


def _pos_int(what: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
        raise ValueError(f"{what} = {v!r}: expected a positive integer")
    return int(v)


def check_size(mem: MemoryLevel, size_bits: int, tech: str | None = None) -> None:
    """Check that template memory ``mem`` may be given capacity ``size_bits`` (bits), word aside.
    ``tech``: the accelerator's technology model (`TECHS`; None: the 65 nm table).

    Raises:
        ValueError: ``mem`` is unbounded (DRAM has no size) or size_bits not a positive integer.
        PhysicsRangeError: SRAM outside 4..1024 KiB (with ``tech = "cacti22"``: 4 KiB..128 MiB),
            size change of an SRAM template above 1024 KiB (65 nm table), or register file of 4 KiB
            (32768 bits) or more. The message names the size.
    """
    size_bits = _pos_int(f"memory {mem.name!r}: size_bits", size_bits)
    cls = memory_class(mem)
    template = mem.size_bits
    if cls == "dram" or template is None:  # the same test (memory_class)
        raise ValueError(f"memory {mem.name!r} is unbounded (DRAM): it has no size to change")
    kib = size_bits / 8192
    if tech == "cacti22" and cls == "sram":
        from costmodel.tech.sram import SRAM_MAX_KIB as hi, SRAM_MIN_KIB as lo
        if not lo <= kib <= hi:
            raise PhysicsRangeError(f"memory {mem.name!r}: SRAM size {kib:g} KiB is outside the CACTI 22 nm "
                                    f"model's range {lo}..{hi} KiB (costmodel.tech.sram)")
        return
    if cls == "regfile":
        if size_bits >= REGFILE_MAX_BITS:
            raise PhysicsRangeError(
                f"memory {mem.name!r}: register-file size {size_bits} bits ({kib:g} KiB) is outside "
                f"the register-file model range (one word up to, excluding, {REGFILE_MAX_BITS} bits "
                f"= {SRAM_MIN_KIB} KiB)")
    elif template > _SRAM_MAX_BITS:
        if size_bits != template:
            raise PhysicsRangeError(
                f"memory {mem.name!r}: template SRAM of {template / 8192:g} KiB is above the "
                f"SRAM model ({SRAM_MIN_KIB}..{SRAM_MAX_KIB} KiB): its size cannot change (asked "
                f"{kib:g} KiB)")
    elif not (REGFILE_MAX_BITS <= size_bits <= _SRAM_MAX_BITS):
        raise PhysicsRangeError(f"memory {mem.name!r}: SRAM size {kib:g} KiB is outside the SRAM "
                                f"model's range {SRAM_MIN_KIB}..{SRAM_MAX_KIB} KiB")


def energy_ratio(mem: MemoryLevel, size_bits: int | None = None, word_bits: int | None = None) -> float:
    """model(size_bits, word_bits) / model(template size, template word) for template ``mem``.

    None = unchanged. An unchanged size and width give exactly 1.0. No range checks: call
    `check_size` first (`scale_memory` does).
    """
    size_r = 1.0
    if size_bits is not None and size_bits != mem.size_bits:
        template = cast(int, mem.size_bits)  # a bounded memory: check_size refuses DRAM
        if memory_class(mem) == "sram":
            size_r = sram_pj_per_bit(size_bits / 8192) / sram_pj_per_bit(template / 8192)
        else:
            size_r = math.sqrt(size_bits / template)
    word_r = 1.0 if word_bits is None or word_bits == mem.word_bits else word_bits / mem.word_bits
    return size_r * word_r


def scale_memory(mem: MemoryLevel, size_bits: int | None = None, word_bits: int | None = None,
                 tech: str | None = None) -> MemoryLevel:
    """Template memory ``mem`` with capacity ``size_bits`` and word ``word_bits`` (bits; None = unchanged).

    read_pj / write_pj (pJ per access of one word) scale by `energy_ratio`; read_bw / write_bw
    (bits per cycle) by ``word_bits / mem.word_bits``. Returns ``mem`` itself when nothing
    changes.

    Raises:
        TooSmallForWord: new size < new word (checked before the range).
        PhysicsRangeError: size outside the model (see `check_size`).
        ValueError: a size or width that is not a positive integer; a size for DRAM.
    """
    if word_bits is not None:
        word_bits = _pos_int(f"memory {mem.name!r}: word_bits", word_bits)
    if size_bits is not None:
        size_bits = _pos_int(f"memory {mem.name!r}: size_bits", size_bits)
        if mem.size_bits is None:
            raise ValueError(f"memory {mem.name!r} is unbounded (DRAM): it has no size to change")
    new_size = mem.size_bits if size_bits is None else size_bits
    new_word = mem.word_bits if word_bits is None else word_bits
    if new_size == mem.size_bits and new_word == mem.word_bits:
        return mem
    if new_size is not None and new_size < new_word:
        raise TooSmallForWord(f"memory {mem.name!r}: {new_size} bits is too small for one word of "
                              f"{new_word} bits")
    if new_size is not None:
        check_size(mem, new_size, tech)
    changes: dict = {"size_bits": new_size, "word_bits": new_word}
    if tech == "cacti22" and memory_class(mem) == "sram":  # absolute: CACTI's energy at the new size
        size = cast(int, new_size)  # an SRAM is bounded
        changes.update(read_pj=cacti_access_pj(size, new_word, "read"),
                       write_pj=cacti_access_pj(size, new_word, "write"))
    else:
        r = energy_ratio(mem, new_size, new_word)
        if r != 1.0:
            changes.update(read_pj=mem.read_pj * r, write_pj=mem.write_pj * r)
    if new_word != mem.word_bits:
        w = new_word / mem.word_bits
        changes.update(read_bw=mem.read_bw * w, write_bw=mem.write_bw * w)
    return replace(mem, **changes)


def cacti_access_pj(size_bits: int, word_bits: int, op: str = "read") -> float:
    """Energy (pJ) of one ``word_bits`` access ("read" or "write") of an SRAM of ``size_bits``
    bits in the CACTI 22 nm model: CACTI's energy per bit at that capacity
    (`costmodel.tech.sram`, a 64-bit-port SRAM) x ``word_bits`` (the per-bit energy taken as
    independent of the port width)."""
    from costmodel.tech.sram import sram_read_pj_per_bit, sram_write_pj_per_bit
    f = sram_read_pj_per_bit if op == "read" else sram_write_pj_per_bit
    return f(size_bits / 8192) * word_bits


def memory_instances(mem: MemoryLevel, acc: Accelerator) -> int:
    """Number of instances of ``mem`` in ``acc``: product of the array dims it is private to."""
    return math.prod(acc.array[a] for a in mem.private_to)


def memory_area_mm2(mem: MemoryLevel, acc: Accelerator) -> float:
    """Area of all instances of ``mem`` in ``acc``, mm^2.

    ``size_bits / 8 * A_SRAM_UM2_PER_BYTE * instances * 1e-6``; DRAM (unbounded) 0. Source:
    DeepOpt's TSMC 65 nm memory-compiler density (a lower bound for flip-flop register files).
    """
    if mem.size_bits is None:
        return 0.0
    if getattr(acc, "tech", None) == "cacti22":
        from costmodel.tech.sram import SRAM_MIN_KIB as lo, sram_area_mm2
        kib = mem.size_bits / 8192
        # an SRAM: CACTI's area at its capacity; a register file: the 4 KiB SRAM's area per byte
        one = sram_area_mm2(kib) if kib >= lo else sram_area_mm2(lo) * kib / lo
        return one * memory_instances(mem, acc)
    return mem.size_bits / 8 * A_SRAM_UM2_PER_BYTE * memory_instances(mem, acc) * 1e-6


def design_area_mm2(acc: Accelerator, cache: dict | None = None) -> float:
    """Chip area of ``acc``, mm^2: ``(pe_count + vector lanes x lane_area_pes) * A_PE_UM2 * 1e-6``
    (the vector unit counted where its ``lane_area_pes`` is set) plus every memory's area; with
    ``tech = "cacti22"`` the PE area scaled by `PE_AREA_SCALE` and, for a DRAM of a kind
    (``acc.dram``: `costmodel.tech.dram`), its interface's (PHY) area on the die.

    ``cache``: an optional dict owned by the caller keeping each memory's area per (tech, size,
    instances) and the PHY's per DRAM (kind, units) for the next designs (the same sum either way)."""
    tech = getattr(acc, "tech", None)
    vec = getattr(acc, "vector", None)
    lanes = vec.lanes * vec.lane_area_pes if vec is not None else 0.0  # the vector unit, in PEs
    pe = (acc.pe_count + lanes) * A_PE_UM2 * 1e-6 * PE_AREA_SCALE.get(tech or "", 1.0)
    phy = 0.0
    dram = getattr(acc, "dram", None)
    if dram is not None:
        from costmodel.tech.dram import dram_area_mm2
        if cache is None:
            phy = dram_area_mm2(dram[0], dram[1])
        else:
            pkey = ("area.phy", dram[0], type(dram[0]), dram[1], type(dram[1]))
            hit = cache.get(pkey)
            if hit is None:
                hit = cache[pkey] = dram_area_mm2(dram[0], dram[1])
            phy = hit
    if cache is None:
        return pe + sum(memory_area_mm2(m, acc) for m in acc.memories) + phy
    return pe + sum(_memory_area_cached(m, acc, tech, cache) for m in acc.memories) + phy


def _memory_area_cached(mem: MemoryLevel, acc: Accelerator, tech: str | None, cache: dict) -> float:
    """`memory_area_mm2`, kept in ``cache`` per (tech, size_bits, instances): all it depends on."""
    key = ("area.memory", tech, mem.size_bits, memory_instances(mem, acc))
    a = cache.get(key)
    if a is None:
        a = cache[key] = memory_area_mm2(mem, acc)
    return a
