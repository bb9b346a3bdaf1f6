"""The block diagnostic: is a criterion's block structure degenerate?

A criterion ``P ⊥ O | A`` is measured block by block: every cell of ``A`` is a block, and the
dependence of P and O is measured inside each. When most rows sit in blocks of a handful of rows (an
admissible column with one value per row, e.g. an unbinned salary), every block is trivially "fair"
or trivially "unfair" and the measure describes the block structure, not the dependence: 20,000
rows in 19,968 salary blocks gave U_MI^TVD = 0.0005, four salary bins 0.013, and no warning (issue 26). This module
computes, per criterion, the number of blocks, the rows per block and the **share of rows in small
blocks** — blocks with fewer than :data:`MIN_BLOCK_ROWS` rows — and a warning when that share
exceeds :data:`WARN_SHARE`.

Exact mode reads the count tables directly: ``share = Σ_a c_a·[c_a < m] / n`` with ``c_a`` the
rows of block ``a`` and ``m`` = :data:`MIN_BLOCK_ROWS`.

DP mode releases nothing that is not noisy or public (derivations: docs/privacy.md, "Block
diagnostic"):

* The number of declared blocks ``K`` and the mean ``n / K`` are public (schema and n).
* The **public bound** ``K·m / n`` caps the soft share below: when it is at most
  :data:`WARN_SHARE` (Adult's paper preset: at most 0.041) the warning cannot fire, nothing is released
  and no ε is spent. A criterion without admissible columns has one block of the public n rows.
* Otherwise the **soft small-block share** ``S/n`` with ``S = Σ_a min(c_a, max(0, 2m − c_a))`` is
  released with OpenDP's Laplace mechanism. ``min(c, max(0, 2m − c))`` has slope ±1 or 0, so
  moving one row (replace-one: one block loses a row, another gains one) changes ``S`` by at most
  2: sensitivity ``2/n``. It lies between the hard shares at ``m`` and at ``2m``.
* A released share warns only when the low end of its 95 % noise interval exceeds
  :data:`WARN_SHARE` (a false warning from noise alone has probability at most 2.5 %). A release that
  could never warn — the public bound less the half-width ``(2/n)/ε·ln 20`` at most
  :data:`WARN_SHARE` (small n or ε) — is not made (:func:`plan`); such a criterion, like one with
  ``diagnostic_share=0``, warns when its declared blocks average fewer than ``m`` rows (public).
* The ε is :data:`DIAGNOSTIC_SHARE` of the audit's ε (``diagnostic_share=`` overrides it, 0
  disables the release), shared equally by the criteria released (:func:`plan`) and taken off the
  total before the measures share the rest: the budget is never exceeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from dpaudit._defaults import DIAGNOSTIC_SHARE, MIN_BLOCK_ROWS, WARN_SHARE  # one definition each (the help shows them)
from dpaudit._fields import Choice, Num, Pair, Whole
from dpaudit._format import plural
from dpaudit.details._base import _PlainRecord
from dpaudit.privacy import laplace_release
from dpaudit.privacy._mechanisms import INTERVAL_Z, derive_seed

__all__ = ["MIN_BLOCK_ROWS", "WARN_SHARE", "DIAGNOSTIC_SHARE", "BlockDiagnostic", "diagnose_exact",
           "diagnose_private", "diagnostic_epsilon", "needs_release", "informative", "plan", "public_bound",
           "soft_small_rows", "small_share"]

#: The kinds of diagnostic: exact (curator), released (DP, Laplace), public (from K and n only).
KINDS = ("exact", "released", "public")
#: The seeded path's spawn key for the diagnostics (the measures use their index).
_SEED_KEY = 1 << 20


@dataclass(frozen=True)
class BlockDiagnostic(_PlainRecord):
    """The block structure of one criterion.

    Attributes
    ----------
    criterion : str
    blocks : int
        Declared blocks (cells of A; 1 without A): public.
    mean_rows : float
        ``n / blocks``: public.
    small_share : float
        Exact: the share of rows in blocks with fewer than ``min_rows`` rows. Released: the noisy
        soft share (docs/privacy.md). Public: the upper bound ``blocks·min_rows / n`` (capped at 1).
    interval : (float, float)
        Holds the share: the value itself (exact), the 95 % noise interval (released), ``[0, bound]``
        (public).
    kind : str
        ``"exact"``, ``"released"`` or ``"public"``.
    epsilon : float or None
        ε spent on this release (None: nothing released).
    nonempty_blocks, median_rows : exact mode only
    warning : str or None
        What the flag means and what to do, when the share exceeds ``warn_share``.
    """

    criterion: str
    blocks: Annotated[int, Whole()]
    mean_rows: Annotated[float, Num(low=0)]
    small_share: float
    interval: Annotated[tuple[float, float], Pair()]
    kind: Annotated[str, Choice(KINDS)]
    epsilon: Annotated[float, Num(low=0, low_open=True)] | None = None
    nonempty_blocks: Annotated[int, Whole()] | None = None
    median_rows: Annotated[float, Num(low=0)] | None = None
    min_rows: Annotated[int, Whole()] = MIN_BLOCK_ROWS
    warn_share: Annotated[float, Num(low=0)] = WARN_SHARE
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "interval": list(self.interval)}

    def line(self) -> str:
        """One line for a report: the blocks, rows per block and the small-block share."""
        if self.kind == "exact":
            share = f"{self.small_share:.1%}"
        elif self.kind == "released":
            share = (f"{self.small_share:.1%} (DP, ε = {self.epsilon:g}, 95% [{self.interval[0]:.1%}, "
                     f"{self.interval[1]:.1%}])")
        else:
            share = f"at most {self.interval[1]:.1%} (public bound)"
        rows = f"{self.mean_rows:,.1f} rows per block on average"
        if self.median_rows is not None:
            rows += f", median {self.median_rows:,.1f} over {self.nonempty_blocks:,} non-empty"
        return f"{self.criterion}: {plural(self.blocks, 'block')}, {rows}; rows in blocks of < {self.min_rows}: {share}"


def _block_rows(counts: np.ndarray) -> np.ndarray:
    """Rows of each block of a count table ``(n_blocks, n_protected, n_outcome)``."""
    return np.asarray(counts, dtype=np.int64).reshape(counts.shape[0], -1).sum(axis=1)


def small_share(counts: np.ndarray, min_rows: int = MIN_BLOCK_ROWS) -> float:
    """Exact share of rows in blocks with fewer than ``min_rows`` rows: ``Σ_a c_a·[c_a < m] / n``.

    Examples
    --------
    >>> small_share(np.array([[[5]], [[30]], [[5]]]), 20)
    0.25
    """
    rows = _block_rows(counts)
    n = int(rows.sum())
    return float(rows[rows < min_rows].sum() / n) if n else 0.0


def soft_small_rows(counts: np.ndarray, min_rows: int = MIN_BLOCK_ROWS) -> int:
    """``S = Σ_a min(c_a, max(0, 2m − c_a))``: blocks under ``m`` rows count fully, blocks between
    ``m`` and ``2m`` partly, larger ones not; one replaced row moves ``S`` by at most 2.

    Examples
    --------
    >>> soft_small_rows(np.array([[[5]], [[30]], [[45]]]), 20)
    15
    """
    rows = _block_rows(counts)
    return int(np.minimum(rows, np.maximum(0, 2 * min_rows - rows)).sum())


def public_bound(blocks: int, n: int, min_rows: int = MIN_BLOCK_ROWS) -> float:
    """The largest soft (and hard) small-block share ``K`` blocks of ``n`` rows can have: ``min(1, K·m/n)``
    (each block's soft count is at most ``m``)."""
    return min(1.0, blocks * min_rows / n)


def needs_release(blocks: int, n: int, min_rows: int = MIN_BLOCK_ROWS, warn_share: float = WARN_SHARE) -> bool:
    """True when the public quantities cannot rule the warning out: several blocks and a public bound
    above ``warn_share``."""
    return blocks > 1 and public_bound(blocks, n, min_rows) > warn_share


def informative(blocks: int, n: int, epsilon: float, min_rows: int = MIN_BLOCK_ROWS,
                warn_share: float = WARN_SHARE) -> bool:
    """True when a release at ``epsilon`` can warn at all: the largest possible share (the public bound)
    less the 95 % half-width ``(2/n)/ε·ln 20`` still exceeds ``warn_share`` (all public: K, n, ε)."""
    return public_bound(blocks, n, min_rows) - 2.0 / n / epsilon * INTERVAL_Z > warn_share


def plan(blocks: Sequence[int], n: int, epsilon: float, min_rows: int = MIN_BLOCK_ROWS,
         warn_share: float = WARN_SHARE) -> list[float]:
    """The ε of each criterion's release (0.0: none) from the diagnostic's ``epsilon``, all public.

    The criteria whose warning the public bound cannot rule out (:func:`needs_release`) are the
    candidates; of those, the ones a release at ``epsilon / #candidates`` could make warn
    (:func:`informative`) share ``epsilon`` equally (each then gets at least that much). None: all 0.
    """
    if epsilon <= 0:
        return [0.0] * len(blocks)
    candidates = [i for i, k in enumerate(blocks) if needs_release(k, n, min_rows, warn_share)]
    useful = [i for i in candidates if informative(blocks[i], n, epsilon / len(candidates), min_rows, warn_share)]
    return [epsilon / len(useful) if i in useful else 0.0 for i in range(len(blocks))]


def _warning(criterion: str, share: float, warn_share: float, min_rows: int, kind: str) -> str | None:
    if share <= warn_share:
        return None
    shown = f"{share:.0%}" if kind == "exact" else f"{math.floor(min(share, 1.0) * 1000) / 10:g}%"  # "at least": rounded down
    what = {"exact": f"{shown} of the rows", "released": f"at least {shown} of the rows (DP estimate, the low "
                                                         "end of its 95% interval)"}[kind]
    return (f"{criterion}: {what} sit in blocks of fewer than {min_rows} rows, so the measures describe the "
            f"block structure rather than the dependence (tiny blocks look fair or unfair by construction); {_FIX}")


_FIX = ("bin the admissible column(s) into fewer, larger blocks (declare Binned edges in the schema) or drop them "
        "from the criterion")


def _public_warning(criterion: str, blocks: int, n: int, min_rows: int) -> str | None:
    """The warning of a diagnostic that was not released: only when the declared blocks average fewer than
    ``min_rows`` rows (public)."""
    if n / blocks >= min_rows:
        return None
    return (f"{criterion}: the {blocks:,} declared blocks average {n / blocks:.1f} rows, fewer than {min_rows}, and "
            "the share of rows in small blocks was not checked (too little ε for it, or diagnostic_share=0); the "
            f"measures may describe the block structure rather than the dependence; {_FIX}")


def diagnose_exact(tables: Sequence[Any], min_rows: int = MIN_BLOCK_ROWS,
                   warn_share: float = WARN_SHARE) -> tuple[BlockDiagnostic, ...]:
    """The exact diagnostic of each count table (curator mode)."""
    out = []
    for t in tables:
        rows = _block_rows(t.counts)
        n, share = int(rows.sum()), small_share(t.counts, min_rows)
        nonempty = rows[rows > 0]
        out.append(BlockDiagnostic(
            str(t.criterion), int(rows.size), n / rows.size, share, (share, share), "exact",
            nonempty_blocks=int(nonempty.size), median_rows=float(np.median(nonempty)) if nonempty.size else 0.0,
            min_rows=min_rows, warn_share=warn_share, warning=_warning(str(t.criterion), share, warn_share, min_rows,
                                                                       "exact")))
    return tuple(out)


def diagnose_private(tables: Sequence[Any], n: int, epsilon: float, *, seed: int | None = None,
                     min_rows: int = MIN_BLOCK_ROWS, warn_share: float = WARN_SHARE,
                     reasons: tuple[str, ...] = ()) -> tuple[BlockDiagnostic, ...]:
    """The DP diagnostic of each table: ``epsilon`` (already debited; 0: release nothing) shared by
    :func:`plan`, Laplace noise of scale ``(2/n)/ε_i`` on the soft share; the others report the public
    bound. A release warns only when its whole 95 % interval lies above ``warn_share`` (noise alone
    makes a false warning with probability at most 2.5 %)."""
    shares = plan([t.counts.shape[0] for t in tables], n, epsilon, min_rows, warn_share)
    out = []
    for i, (t, eps) in enumerate(zip(tables, shares)):
        blocks, crit = int(t.counts.shape[0]), str(t.criterion)
        if eps > 0:
            r = laplace_release(soft_small_rows(t.counts, min_rows) / n, sensitivity=2.0 / n, epsilon=eps,
                                seed=derive_seed(seed, _SEED_KEY, i), reasons=reasons)
            warn = _warning(crit, r.interval[0], warn_share, min_rows, "released")
            out.append(BlockDiagnostic(crit, blocks, n / blocks, r.value, r.interval, "released", epsilon=eps,
                                       min_rows=min_rows, warn_share=warn_share, warning=warn))
            continue
        bound = (1.0 if n < min_rows else 0.0) if blocks == 1 else public_bound(blocks, n, min_rows)
        out.append(BlockDiagnostic(crit, blocks, n / blocks, bound, (0.0, bound), "public", min_rows=min_rows,
                                   warn_share=warn_share, warning=_public_warning(crit, blocks, n, min_rows)))
    return tuple(out)


def diagnostic_epsilon(tables: Sequence[Any], n: int, epsilon: float, share: float) -> float:
    """The ε the diagnostics take off a DP audit's ``epsilon``: ``share·epsilon`` when :func:`plan` gives
    some criterion a release, else 0 (the measures keep the whole budget)."""
    return epsilon * share if any(plan([t.counts.shape[0] for t in tables], n, epsilon * share)) else 0.0


def check_share(share: Any) -> float:
    """``diagnostic_share`` validated: a number in [0, 1)."""
    from dpaudit._errors import DPAuditError

    if isinstance(share, bool) or not isinstance(share, (int, float)) or not (0 <= share < 1) or math.isnan(share):
        raise DPAuditError(f"diagnostic_share must be a fraction of epsilon in [0, 1) (default {DIAGNOSTIC_SHARE}), "
                           f"got {share!r}")
    return float(share)
