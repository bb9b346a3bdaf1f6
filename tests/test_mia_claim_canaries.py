"""The canaries of a DP audit (dpaudit.mia.claim.canaries): constructions, inclusion, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit._errors import DataError
from dpaudit.mia.claim.canaries import CANARY_KINDS, choose_canaries, include


def data(n: int = 200, d: int = 12, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) / np.sqrt(d)  # non-negative, row norm ≤ 1 like the audit's preprocessing
    return X, rng.integers(0, 2, n)


def test_mislabelled_canaries_are_m_distinct_records_with_their_label_flipped():
    X, y = data()
    c = choose_canaries(X, y, "mislabelled", 30, seed=4)
    assert c.kind == "mislabelled" and c.X.shape == (30, X.shape[1]) and c.y.shape == (30,)
    assert c.source_rows is not None and len(set(c.source_rows.tolist())) == 30
    np.testing.assert_array_equal(c.X, X[c.source_rows])
    np.testing.assert_array_equal(c.y, 1 - y[c.source_rows])


def test_ood_canaries_are_unit_norm_directions_with_random_labels():
    X, y = data(d=40)
    c = choose_canaries(X, y, "ood", 500, seed=2)
    assert c.source_rows is None and c.X.shape == (500, 40)
    np.testing.assert_allclose(np.linalg.norm(c.X, axis=1), 1.0, rtol=0, atol=1e-12)
    assert (c.X < 0).mean() > 0.4  # about half the coordinates negative: outside the non-negative data
    assert stats.binomtest(int(c.y.sum()), 500).pvalue > 1e-4 and set(c.y.tolist()) == {0, 1}
    # more canaries than records is fine for synthetic ones
    assert len(choose_canaries(X[:5], y[:5], "ood", 50, seed=2).y) == 50


def test_vulnerable_canaries_are_the_top_scored_records_and_need_the_scores():
    X, y = data()
    v = np.random.default_rng(9).random(len(y))
    c = choose_canaries(X, y, "vulnerable", 10, seed=0, vulnerability=v)
    assert c.source_rows is not None
    assert set(c.source_rows.tolist()) == set(np.argsort(v)[-10:].tolist())
    np.testing.assert_array_equal(c.y, y[c.source_rows])
    with pytest.raises(DataError, match="vulnerability"):
        choose_canaries(X, y, "vulnerable", 10, seed=0)
    with pytest.raises(DataError, match="one finite score per record"):
        choose_canaries(X, y, "vulnerable", 10, seed=0, vulnerability=v[:-1])


@pytest.mark.parametrize("kind", CANARY_KINDS)
def test_canaries_are_deterministic_given_the_seed_and_within_the_unit_ball(kind):
    X, y = data()
    v = np.arange(len(y), dtype=float)
    a, b = (choose_canaries(X, y, kind, 20, seed=11, vulnerability=v) for _ in range(2))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert np.linalg.norm(a.X, axis=1).max() <= 1.0 + 1e-12
    assert set(a.y.tolist()) <= {0, 1} and a.description
    if kind not in ("vulnerable", "orthogonal"):  # these do not depend on the seed
        c = choose_canaries(X, y, kind, 20, seed=12)
        assert not np.array_equal(a.X, c.X)


def test_include_is_a_seeded_fair_coin_per_canary():
    m = 20_000
    mask = include(m, seed=3)
    assert mask.dtype == bool and mask.shape == (m,)
    np.testing.assert_array_equal(mask, include(m, seed=3))
    assert not np.array_equal(mask, include(m, seed=4))
    assert stats.binomtest(int(mask.sum()), m).pvalue > 1e-4
    # independent of the canary draws made with the same seed (own stream)
    assert stats.binomtest(int((mask[1:] == mask[:-1]).sum()), m - 1).pvalue > 1e-4
    assert include(0, seed=1).shape == (0,)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"kind": "noisy", "m": 3}, "canary kind"),
    ({"kind": "mislabelled", "m": 0}, "positive integer"),
    ({"kind": "mislabelled", "m": 201}, "at least 201 records"),
])
def test_bad_requests_are_refused(kwargs, match):
    X, y = data()
    with pytest.raises(DataError, match=match):
        choose_canaries(X, y, seed=0, **kwargs)


def test_rows_outside_the_unit_ball_are_refused():
    X, y = data()
    with pytest.raises(DataError, match="norm ≤ 1"):
        choose_canaries(X * 10, y, "mislabelled", 3, seed=0)
    with pytest.raises(DataError, match="labels 0/1"):
        choose_canaries(X, y + 1, "mislabelled", 3, seed=0)


# --------------------------------------------------------------------------------------------------
# "orthogonal" canaries: the data's least-variance directions, a basis that does not depend on LAPACK
# --------------------------------------------------------------------------------------------------


def one_hot(n: int, blocks: tuple[int, ...], seed: int) -> np.ndarray:
    """Rows with one hot per block (some categories unused), scaled to norm 1, like the audit's features."""
    rng = np.random.default_rng(seed)
    cols = []
    for k in blocks:
        used = max(1, k - 1)  # the last category never occurs: a null direction
        cols.append(np.eye(k)[rng.integers(0, used, n)])
    return np.hstack(cols) / np.sqrt(len(blocks))


def test_orthogonal_canaries_are_unit_least_variance_directions_then_antipodes():
    X = one_hot(300, (4, 5, 6), seed=1)
    d = X.shape[1]
    c = choose_canaries(X, np.zeros(300, dtype=np.int64), "orthogonal", d + 3, seed=0)
    assert c.kind == "orthogonal" and c.source_rows is None and set(c.y.tolist()) == {1}
    np.testing.assert_allclose(np.linalg.norm(c.X, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(c.X[:d] @ c.X[:d].T, np.eye(d), atol=1e-9)  # an orthonormal basis first
    np.testing.assert_allclose(c.X[d:], -c.X[:3], atol=0)  # then antipodes
    variance = np.linalg.norm(X @ c.X[:d].T, axis=0)
    assert np.all(np.diff(variance) >= -1e-9)  # least variance first
    assert np.all(variance[:5] < 1e-9)  # the null space (3 unused categories + 2 block dependencies) first
    with pytest.raises(DataError, match="feature columns"):
        choose_canaries(X, np.zeros(300, dtype=np.int64), "orthogonal", 2 * d + 1, seed=0)


def test_orthogonal_basis_of_a_repeated_singular_value_depends_only_on_its_subspace():
    from dpaudit.mia.claim.canaries import canonical_basis

    X = one_hot(200, (5, 5), seed=3)
    sv, vt = np.linalg.svd(X, full_matrices=True)[1:]
    sv = np.concatenate([sv, np.zeros(X.shape[1] - sv.size)])[::-1]
    V = vt[::-1]
    k = int(np.sum(sv < 1e-9))
    assert k >= 2
    rotated = V.copy()
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((k, k)))[0]
    rotated[:k] = q @ V[:k]  # another valid SVD basis of the null space
    np.testing.assert_allclose(canonical_basis(sv, rotated), canonical_basis(sv, V), atol=1e-12)
    assert not np.allclose(rotated[:k], V[:k])


def test_orthogonal_canaries_expose_a_non_private_model_and_not_a_private_one():
    """The audit can fail: non-private logistic regression on these canaries gives a one-run bound above 1,
    diffprivlib's ε = 1 logistic regression stays ≤ 1 (40 base rows of a one-hot design with d = 90
    columns, so the m = 50 canaries lie where the data have no variance at all)."""
    from dpaudit.mia.claim.audit import canary_scores_of
    from dpaudit.mia.claim.learners import LEARNERS
    from dpaudit.mia.dp_audit import epsilon_lower_bound_one_run

    X = one_hot(40, (10, 12, 14, 16, 18, 20), seed=5)
    y = np.random.default_rng(5).integers(0, 2, 40)
    c = choose_canaries(X, y, "orthogonal", 50, seed=0)
    mask = include(c.y.size, seed=7)[None, :]
    bounds = {}
    for name in ("logreg", "dp-logreg"):
        s = canary_scores_of(LEARNERS[name], 1.0, 1e-5, (X, y), c, mask, 0, 1)[0]
        bounds[name] = epsilon_lower_bound_one_run(s[mask[0]], s[~mask[0]], delta=1e-5).epsilon
    assert bounds["logreg"] > 1.0, bounds
    assert bounds["dp-logreg"] <= 1.0, bounds
