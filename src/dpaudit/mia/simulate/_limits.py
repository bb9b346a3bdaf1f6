"""How large a simulation may be: a bound on the cells it holds at once, derived from memory.

Both simulators hold matrices with one value per model and pool record (M × N+). Measured peak
resident memory per cell (``resource.getrusage`` high-water mark minus the mark before, two sizes
each, 2 cores):

* ``dpaudit mia simulate calibration`` (:func:`~dpaudit.mia.simulate.gaussian_scores`, its
  evaluation and the saved ScoreSet): **34 bytes** per cell of M × N+ — the float64 score and bool
  keep matrices (9 bytes), the draws behind them and the evaluation (2.1× the matrix; docs/mia.md);
  M = 64: 322 MiB at N+ = 10⁵, 940 MiB at 4 × 10⁵.
* :func:`~dpaudit.mia.simulate.fpc_simulation`: **27 bytes** per cell of M × N+ of one repeat (keep,
  its float copy, the scores and the OUT sums), plus **24 bytes** per cell of R × N+ (the three
  per-record arrays kept for every repeat): 648 MiB at M = 256, N+ = 8 × 10⁴; 4.7 GiB at R = 200,
  N+ = 10⁶. Its bound is on (M + R) × N+.

:data:`MAX_CELLS` = 5 × 10⁸ cells is then at most ~17 GB, which a 24 GB machine holds with room
for the interpreter and the rest. Larger simulations are refused before anything is allocated.
"""

from __future__ import annotations

from typing import Any

from dpaudit._validation import whole_number

__all__ = ["MAX_CELLS", "within_cells"]

#: The most cells (one value per model or repeat and pool record) a simulation may hold at once.
MAX_CELLS = 500_000_000


def within_cells(name: str, value: Any, *, per: int, what: str, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int ≥ ``minimum`` whose ``value × per`` cells fit in :data:`MAX_CELLS` (and ≤ ``maximum``).

    ``what`` names ``per`` in the message (``"n_models = 64 models per record"``).

    Examples
    --------
    >>> within_cells("n_records", 1000, per=64, what="n_models = 64")
    1000
    >>> within_cells("n_records", 10**8, per=64, what="n_models = 64", minimum=2)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: n_records must be an integer >= 2 and <= 7.8125e+06 (with n_models = 64: at most 500,000,000 cells, ~17 GB at 34 bytes each, fit in a 24 GB machine; use fewer models or records), got 100000000
    """
    largest = MAX_CELLS // max(per, 1)
    return whole_number(name, value, minimum=minimum, maximum=largest if maximum is None else min(largest, maximum),
                        hint=f" (with {what}: at most {MAX_CELLS:,} cells, ~17 GB at 34 bytes each, fit in a "
                             "24 GB machine; use fewer models or records)")
