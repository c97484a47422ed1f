"""CoSA (Huang et al., ISCA 2021): the prime-factor allocation MIP of one layer on HiGHS.

* `mapper`: the `CosaMapper` (solves as work units, decoding both ways, the best kept);
* `model`: the MIP as arrays for HiGHS (`build_model`);
* `stall`: the refill-stall term of a single-buffered innermost memory (version 3);
* `hint`: an accelerator's ``[spatial_hint]`` as MIP constraints;
* `check`: a brute-force evaluation of the MIP's objective, the reference of the tests.
"""

from mappers.fullspace.cosa.mapper import (COSA, DECODE_ORDER, DEFAULT_SOLVES, CosaMapper, best_decode, decode,
                                           decode_loma, parse_solve, solve_model)

__all__ = ["CosaMapper", "COSA", "solve_model", "decode", "decode_loma", "best_decode", "DECODE_ORDER",
           "DEFAULT_SOLVES", "parse_solve"]
