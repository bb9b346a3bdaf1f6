"""``dpaudit.mia._distributions`` returns scipy.stats's floats, and evaluating a score file imports neither
scipy.stats nor, without a bootstrap, scipy.sparse (issue 25, "Sub-second start": module names, not time)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from dpaudit.mia._distributions import beta_ppf, chi2_sf, norm_isf, t_isf

RNG = np.random.default_rng(0)
#: Probabilities across (0, 1): uniform, log-uniform down to the smallest subnormal, and the edges near 1.
Q = np.concatenate([RNG.random(4000), 10.0 ** -RNG.uniform(0, 300, 2000), [5e-324, 1e-300, 1e-12, 0.5, 1 - 1e-12]])


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def test_norm_isf_is_scipy_stats():
    assert _same(norm_isf(Q), stats.norm.isf(Q))
    assert type(norm_isf(0.01)) is type(stats.norm.isf(0.01)) and norm_isf(0.01) == stats.norm.isf(0.01)


@pytest.mark.parametrize("df", [1.0, 2.0, 5.0, 127.0, 1e6])
def test_t_isf_is_scipy_stats(df):
    assert _same(t_isf(Q, df), stats.t.isf(Q, df))
    dfs = RNG.integers(1, 1000, Q.size).astype(np.float64)
    assert _same(t_isf(Q, dfs), stats.t.isf(Q, dfs))


def test_beta_ppf_is_scipy_stats():
    a, b = RNG.integers(1, 100_000, Q.size), RNG.integers(1, 100_000, Q.size)
    assert _same(beta_ppf(Q, a, b), stats.beta.ppf(Q, a, b))
    assert _same(beta_ppf(0.025, 1, 1), stats.beta.ppf(0.025, 1, 1))


def test_chi2_sf_is_scipy_stats():
    x = np.concatenate([RNG.exponential(4.0, 4000), [0.0, 1e-300, 1e300, np.inf, np.nan]])
    for df in (1, 2, 7):
        assert _same(chi2_sf(x, df), stats.chi2.sf(x, df=df))


_EVALUATE = """
import json, sys
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.scores import ScoreSet
str(evaluate(ScoreSet.load(sys.argv[1]), n_boot={n_boot}))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("scipy.stats", "scipy.sparse", "dpaudit.measures",
                                                                   "dpaudit.report.html")))))
"""


@pytest.mark.parametrize("n_boot", [0, 20])
def test_evaluating_a_score_file_imports_no_scipy_stats(tmp_path, n_boot):
    from dpaudit.mia.simulate import gaussian_scores  # the simulator reads scipy.stats: not in the child

    gaussian_scores(16, 200, seed=0).to_scoreset().save(tmp_path / "s.npz")
    code = _EVALUATE.format(n_boot=n_boot)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s.npz")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert not [m for m in loaded if m.startswith(("scipy.stats", "dpaudit.measures", "dpaudit.report.html"))], loaded
    assert bool([m for m in loaded if m.startswith("scipy.sparse")]) == (n_boot > 0), loaded
