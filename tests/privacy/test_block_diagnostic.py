"""The block diagnostic's DP release (dpaudit.diagnostics, docs/privacy.md "Block diagnostic").

The released statistic is the soft small-block count ``S = Σ_a min(c_a, max(0, 2m − c_a))`` over n
(public); its replace-one sensitivity is 2/n. Checked here: on every replace-one neighbour of random
and adversarial databases (an oracle on the block sizes, independent of dpaudit), the bound is
attained by a worst-case pair, the hard count it replaces really has sensitivity m (so a release of it
at 2/n would break its claim), and the empirical privacy audit of dpaudit.selfcheck bounds the real
OpenDP release's loss on the worst pair by its claimed ε while catching the broken one.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.diagnostics import MIN_BLOCK_ROWS, diagnose_private, soft_small_rows
from dpaudit.privacy._mechanisms import laplace_draws
from dpaudit.selfcheck._bound import _audit, _identity

M = MIN_BLOCK_ROWS


def soft(sizes, m=M):
    """The oracle: the soft count from block sizes, one block at a time."""
    return sum(c if c <= m else (2 * m - c if c < 2 * m else 0) for c in sizes)


def hard(sizes, m=M):
    return sum(c for c in sizes if c < m)


def neighbours(sizes):
    """Every replace-one neighbour's block sizes: one row leaves block a and joins block b (b = a: no change)."""
    for a, b in itertools.permutations(range(len(sizes)), 2):
        if sizes[a] > 0:
            moved = list(sizes)
            moved[a] -= 1
            moved[b] += 1
            yield moved


def table(sizes):
    """A (blocks, 2, 2) count table with these block sizes (the rows spread over the P × O cells)."""
    out = np.zeros((len(sizes), 2, 2), dtype=np.int64)
    for a, c in enumerate(sizes):
        out[a].flat[:] = [c // 4 + (i < c % 4) for i in range(4)]
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3 * M), min_size=1, max_size=8))
def test_replace_one_moves_the_soft_count_by_at_most_two(sizes):
    assert soft_small_rows(table(sizes)) == soft(sizes)
    base = soft(sizes)
    assert all(abs(soft(nb) - base) <= 2 for nb in neighbours(sizes))


@pytest.mark.parametrize("sizes", [
    [M + 1, M - 1],            # both blocks move towards m: +2, the bound attained
    [M, M - 1], [2 * M, 2 * M - 1], [2 * M + 1, 0], [1] * 10, [M] * 5, [0, 0, 3 * M],
])
def test_adversarial_block_sizes(sizes):
    base = soft(sizes)
    worst = max(abs(soft(nb) - base) for nb in neighbours(sizes))
    assert worst <= 2
    if sizes == [M + 1, M - 1]:
        assert worst == 2  # tight: no smaller sensitivity holds


def test_the_hard_count_has_sensitivity_m():
    """Why the hard count is not released: a block at m rows dropping to m − 1 adds m − 1 rows at once."""
    sizes = [M, M - 2]
    assert max(abs(hard(nb) - hard(sizes)) for nb in neighbours(sizes)) == M


def test_the_release_is_the_soft_share_at_sensitivity_two_over_n():
    sizes = [M + 1, M - 1, 0, 3]
    n, eps = sum(sizes), 0.5

    class T:  # the two attributes diagnose_private reads
        counts = table(sizes)
        criterion = "p ⊥ o | a"

    (d,) = diagnose_private([T()], n, eps, seed=1, warn_share=0.0)
    assert d.kind == "released" and d.epsilon == eps
    scale = (2 / n) / eps
    assert (d.interval[1] - d.interval[0]) / 2 == pytest.approx(scale * np.log(20))
    assert (d.interval[0] + d.interval[1]) / 2 == pytest.approx(d.small_share)


@pytest.mark.parametrize("broken", [False, True])
def test_empirical_loss_on_the_worst_pair(broken):
    """OpenDP draws of the released share on D and on its worst neighbour D′ (``[m+1, m−1] → [m, m]``):
    the audited ε lower bound stays below the claimed ε; releasing the hard share at the claimed
    sensitivity 2/n (its true one is m/n) is caught."""
    n, eps, draws = 2 * M, 1.0, 20_000
    d0, d1 = [M + 1, M - 1], [M, M]
    value = hard if broken else soft
    v0, v1 = value(d0) / n, value(d1) / n
    if broken:  # the hard count's own worst pair: [m, m − 2] → [m − 1, m − 1]
        v0, v1 = hard([M, M - 2]) / n, hard([M - 1, M - 1]) / n
    out0 = laplace_draws(v0, sensitivity=2 / n, epsilon=eps, draws=draws)
    out1 = laplace_draws(v1, sensitivity=2 / n, epsilon=eps, draws=draws)
    found = _audit(out0, out1, _identity, lambda test: "threshold", 0.95, np.random.default_rng(0))
    if broken:
        assert found.epsilon > 1.5 * eps
    else:
        assert 0.5 < found.epsilon <= eps
