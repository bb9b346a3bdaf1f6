"""The pool and the training sets of a run: its default size, the checks of its design and labels, and
which models are scored from their probabilities (:func:`dpaudit.mia.train.trainer.train_run`)."""

from __future__ import annotations

import numpy as np

from dpaudit._errors import DataError, DPAuditError

__all__ = ["default_pool", "check_pool", "probability_only", "check_two_classes"]


def default_pool(n_rows: int, design: str) -> int:
    """The pool of a run that names none: every row of the data, less one when the efficient design needs
    an even pool and the row count is odd (the row left out is drawn with the pool, from the seed).

    Examples
    --------
    >>> default_pool(48_842, "efficient"), default_pool(30_001, "efficient"), default_pool(30_001, "poisson")
    (48842, 30000, 30001)
    """
    pool = n_rows - (n_rows % 2 if design == "efficient" else 0)
    if pool < 4:
        raise DPAuditError(f"the data has {n_rows} rows; a pool needs at least 4 records")
    return pool


def check_pool(pool_size: int, design: str) -> None:
    """Refuse an odd pool under the efficient design, which trains every model on N+/2 records on average."""
    if design == "efficient" and pool_size % 2:
        raise DPAuditError(f"pool_size must be even under the efficient design (every record IN in exactly M/2 models, "
                           f"so each model trains on N+/2 records on average and N = N+/2), got {pool_size:,}; use an "
                           f"even size such as {pool_size - 1:,}, leave it out to use every row (one left out if their "
                           "number is odd), or use design 'poisson'")


def probability_only(model: str) -> bool:
    """Whether the model's scores come from its probabilities (a factory, TabPFN), not an exact logit."""
    return ":" in model or model == "tabpfn"


def check_two_classes(keep: np.ndarray, y: np.ndarray) -> None:
    """Refuse (before anything is written) a design in which some model's training set has one class."""
    positives = keep.astype(np.int64) @ y
    sizes = keep.sum(axis=1)
    bad = np.flatnonzero((positives == 0) | (positives == sizes))
    if bad.size:
        m = int(bad[0])
        raise DataError(f"model {m}'s training set ({int(sizes[m])} records) holds only one class, as do {bad.size} "
                        "model(s) in all; use a larger pool (or train_size) or a label with both classes common")
