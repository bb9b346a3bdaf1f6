"""The evaluation's compact layouts against straightforward computations (issue 25).

Eight bootstrap target sets per byte, the listed targets stacked block by block, the products split
finer than the float sums, the re-chosen threshold in chunks of replicates, and the balanced
references' partners found along records: each must give exactly what the plain computation gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.mia.metrics import bootstrap, rechosen
from dpaudit.mia.metrics.bootstrap import Bootstrap
from dpaudit.mia.metrics.replicates import TargetEntries, TargetSets
from dpaudit.mia.references import model_keys, partner_rows


@pytest.mark.parametrize("n_sets", [1, 4, 8, 9, 13])
@pytest.mark.parametrize("field_bits", [None, 9, 2])
@pytest.mark.parametrize("set_records", [None, 5])
def test_packed_sets_count_exactly(n_sets, field_bits, set_records, monkeypatch):
    """Weighted counts of every set, whatever the sets per byte (g = 4: 8 per byte; g = 5: 5; g = 8: 8) and
    however finely the products are split, equal Σ_b Σ_m Σ_x w_m w_x [target in set] summed directly."""
    if field_bits is not None:
        monkeypatch.setattr(bootstrap, "_FIELD_BITS", field_bits)
    if set_records is not None:
        monkeypatch.setattr(bootstrap, "_SET_RECORDS", set_records)
    m, n = 9, 1300
    rng = np.random.default_rng(n_sets)
    boot = Bootstrap((m, n), 6, seed=2)
    members = [rng.random((m, n)) < p for p in rng.uniform(0.05, 0.9, size=n_sets)]
    sets = TargetSets((m, n), n_sets, group=boot.group)
    for i, s in enumerate(members):
        for lo in range(0, n, 500):
            sets.add(i, slice(lo, min(lo + 500, n)), s[:, lo:lo + 500])
    assert len(sets.codes) == -(-n_sets // (boot.group * (8 // boot.group)))
    counts = np.concatenate([boot.column_totals(block, sets)[0] for block in boot.blocks()])
    w_models, w_records = boot.w_models, boot.w_records
    for i, s in enumerate(members):
        direct = np.einsum("bm,mx,bx->b", w_models, s.astype(np.float64), w_records)  # integers: exact
        assert np.array_equal(counts[:, i], direct), i


def test_stacked_entries_are_one_construction():
    """Blocks of listed targets side by side: the same canonical sparse arrays, and bit-identical totals."""
    m, n, k = 7, 900, 3
    rng = np.random.default_rng(0)
    picked = np.flatnonzero(rng.random(m * n) < 0.1)
    values = rng.random((picked.size, k)) * (rng.random((picked.size, k)) < 0.6)
    whole = TargetEntries((m, n), picked, values)
    pieces, edges = [], [0, 1, 250, 251, 700, n]
    rows, cols = np.divmod(picked, n)
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (cols >= lo) & (cols < hi)
        pieces.append(TargetEntries((m, hi - lo), rows[inside] * (hi - lo) + cols[inside] - lo, values[inside]))
    stacked = TargetEntries.stacked(pieces)
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(stacked.matrix, name), getattr(whole.matrix, name)), name
    boot = Bootstrap((m, n), 5, seed=1)
    for block in boot.blocks():
        assert np.array_equal(boot.entry_totals(block, stacked), boot.entry_totals(block, whole))


@pytest.mark.parametrize("rows", [1, 3, 16])
def test_rechosen_threshold_does_not_depend_on_its_chunks(rows, monkeypatch):
    rng = np.random.default_rng(rows)
    stat = np.round(rng.normal(size=(12, 800)), 1)
    keep = rng.random(stat.shape) < 0.5
    stat += keep
    boot = Bootstrap(stat.shape, 21, seed=5)
    default = boot.tpr_at_fpr(stat, keep, (0.05, 0.01))
    monkeypatch.setattr(rechosen, "_CUMSUM_ROWS", rows)
    assert np.array_equal(boot.tpr_at_fpr(stat, keep, (0.05, 0.01)), default)


def test_partners_are_each_groups_largest_key():
    """Per record: the OUT model with the largest key partners its IN targets, the IN model with the largest
    key its OUT targets (the lower model on equal keys), found here one record at a time."""
    m, width, first = 11, 40, 123
    rng = np.random.default_rng(4)
    keep = rng.random((m, width)) < 0.5
    keep[0], keep[1] = True, False  # both groups in every record
    key = model_keys(m, first, width, seed=7)
    assert np.array_equal(model_keys(m, first, width, seed=7, by_record=True), key.T)
    best_in, best_out = partner_rows(keep, first, seed=7)
    for x in range(width):
        ins = [mm for mm in range(m) if keep[mm, x]]
        outs = [mm for mm in range(m) if not keep[mm, x]]
        assert best_in[x] == max(ins, key=lambda mm: (key[mm, x], -mm))
        assert best_out[x] == max(outs, key=lambda mm: (key[mm, x], -mm))
