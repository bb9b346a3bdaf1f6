"""Private release — the only package that draws noise (spec ``fairness.md`` §3; docs/privacy.md).

Neighbouring relation: **replace one tuple; n is public** (the relation the paper's sensitivities
assume). Measures compute exact values and say *what* to release (a number and its sensitivity, or a
score vector for a private selection); this package releases it:

* :func:`laplace_release` — a number with Laplace noise of scale Δ/ε (ε-DP; Dwork et al. 2006);
* :func:`noisy_top_k` — the indices of the k largest scores by report-noisy-top-k (ε-DP for scores
  whose L∞ sensitivity is Δ∞: OpenDP's map gives ε = 2·k·Δ∞/scale);
* :class:`Budget` — the accountant that debits each release before it happens (``spend``, or
  ``spend_many`` for several releases, all or none);
* :class:`LedgerBudget` — the same accountant persisted in a crash-safe ledger file shared by
  processes and invocations, from :meth:`Budget.open(path, total_epsilon) <Budget.open>`: each debit
  is checked and appended under a file lock and written atomically (``_ledger.py`` has the format);
* :class:`Release` / :func:`exact_release` — what a released number carries (value, ε, sensitivity,
  scale, 95 % interval, mechanism, why it is not DP when it is not).

Noise comes from OpenDP's vetted samplers only, never from ``numpy.random`` (floating-point attacks
break naive samplers: Mironov, CCS 2012). The one exception is the **seeded test path** (``seed=...``
on either mechanism): noise from a known seed can be subtracted, so such a release is marked
``dp=False`` with that reason; it exists for tests and reproducible examples.
"""

from dpaudit.privacy._budget import Budget
from dpaudit.privacy._ledger import LedgerBudget, LedgerEntry
from dpaudit.privacy._mechanisms import INTERVAL_Z, SelectionRelease, laplace_release, noisy_top_k
from dpaudit.privacy._release import Release, exact_release

__all__ = ["Release", "SelectionRelease", "Budget", "LedgerBudget", "LedgerEntry", "laplace_release", "noisy_top_k",
           "exact_release", "INTERVAL_Z"]
