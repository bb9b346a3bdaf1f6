"""Synthetic generators: the flip table (spec §5) and the census-like IPUMS-CPS stand-in (spec §4)."""

import math
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import dpaudit
from dpaudit import DPAuditError
from dpaudit._validation import NUMBER, SEED, WHOLE
from dpaudit.datasets import synthetic
from dpaudit.datasets.synthetic import (
    CENSUS_COLUMNS,
    CENSUS_PRESET,
    CENSUS_SCHEMA,
    FLIP_CRITERION,
    census,
    flip,
    write_census,
)


def h2(p: float) -> float:
    return 0.0 if p in (0.0, 1.0) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


# --------------------------------------------------------------------------------------------------
# flip
# --------------------------------------------------------------------------------------------------
# (rows per group N, level t) with t·N/2 an integer, so the closed forms are exact
FLIP_CASES = [(100, 0.0), (100, 0.1), (200, 0.25), (1000, 0.37), (200, 0.5), (1000, 0.9), (200, 1.0), (2, 1.0)]


@pytest.mark.parametrize(("n", "t"), FLIP_CASES)
def test_flip_closed_forms_through_audit(n, t):
    frame, schema = flip(n, t, seed=11)
    assert len(frame) == 2 * n
    repair = {}
    for semantics in ("ci", "bag", "set"):
        res = dpaudit.audit(frame, FLIP_CRITERION, schema=schema, measures=("tvd", "tc", "repair"),
                            k=4, semantics=semantics, exact=True)
        repair[semantics] = res["repair"].value
        assert res.n == 2 * n
        assert res["tvd"].value == pytest.approx(t * t / 2, abs=1e-12)
        assert res["tc"].value == pytest.approx(t, abs=1e-12)
        mi_bits = res["tvd"].extras["baseline"][0]["mi_bits"]
        assert mi_bits == pytest.approx(1 - h2((1 + t) / 2), abs=1e-12)
    assert repair["ci"] == pytest.approx(2 * n * t / (1 + t), rel=1e-9, abs=1e-9)
    assert repair["bag"] == pytest.approx(n * min(2 * t, 1), abs=1e-9)
    assert repair["set"] == (1.0 if t == 1.0 else 0.0)


def test_flip_tc_any_k_at_least_four():
    frame, schema = flip(400, 0.5)
    for k in (4, 5, 500):
        assert dpaudit.audit(frame, FLIP_CRITERION, schema=schema, measures=("tc",), k=k, exact=True)["tc"].value == \
            pytest.approx(0.5, abs=1e-12)


def test_flip_counts_order_and_shuffle():
    plain, schema = flip(10, 0.4)
    assert schema == synthetic._FLIP_SCHEMA
    assert list(plain.columns) == ["sex", "outcome"] and plain["outcome"].dtype == np.int64
    # fixed order without a seed: Male 0, Male 1, Female 0, Female 1 (2 of 5 flipped per group)
    assert plain["sex"].tolist() == ["Male"] * 10 + ["Female"] * 10
    assert plain["outcome"].tolist() == [0] * 3 + [1] * 7 + [0] * 7 + [1] * 3
    a, _ = flip(10, 0.4, seed=5)
    b, _ = flip(10, 0.4, seed=5)
    c, _ = flip(10, 0.4, seed=6)
    assert a.equals(b) and not a.equals(c) and not a.equals(plain)
    key = ["sex", "outcome"]
    assert a.groupby(key).size().equals(plain.groupby(key).size())
    assert a.index.tolist() == list(range(20))


def test_flip_rounds_the_flipped_count_half_up():
    # N/2 = 5 rows per (sex, outcome); t = 0.3 flips round(1.5) = 2 rows, t = 0.5 flips round(2.5) = 3
    for t, moved in ((0.3, 2), (0.5, 3), (0.09, 0), (0.1, 1)):
        frame, _ = flip(10, t)
        assert int(((frame["sex"] == "Male") & (frame["outcome"] == 1)).sum()) == 5 + moved


def _message(template: str, **fields) -> str:
    """The exact message of a ``dpaudit._validation`` template, as a pattern."""
    return "^" + re.escape(template.format(**fields)) + "$"


@pytest.mark.parametrize("n", [0, -2, 2.0, True, "10", None])
def test_flip_rejects_bad_group_size(n):
    with pytest.raises(DPAuditError, match=_message(WHOLE, name="n_per_group", bounds=" >= 2", value=n)):
        flip(n, 0.5)
    with pytest.raises(DPAuditError, match="n_per_group must be even"):
        flip(3, 0.5)


@pytest.mark.parametrize("t", [-0.1, 1.0001, math.nan, math.inf, "0.5", None, True])
def test_flip_rejects_bad_level(t):
    with pytest.raises(DPAuditError, match=_message(NUMBER, name="t", bounds=" >= 0 and <= 1", value=t)):
        flip(10, t)


@pytest.mark.parametrize("seed", [-1, 1.5, "1"])
def test_flip_rejects_bad_seed(seed):
    with pytest.raises(DPAuditError, match=_message(SEED, name="seed", value=seed)):
        flip(10, 0.5, seed=seed)


# --------------------------------------------------------------------------------------------------
# census: schema, codes, determinism
# --------------------------------------------------------------------------------------------------
def test_census_constants():
    assert CENSUS_PRESET == ("HEALTH ⊥ INCTOT | EDUC", "HEALTH ⊥ OCC | EDUC",
                             "HEALTH ⊥ MARST | AGE", "HEALTH ⊥ INCTOT | AGE")
    assert len(dpaudit.parse_criteria(CENSUS_PRESET)) == 4
    assert tuple(CENSUS_SCHEMA.columns) == CENSUS_COLUMNS
    assert CENSUS_SCHEMA["INCTOT"].edges == tuple(float(e) for e in range(0, 200_001, 10_000))
    assert CENSUS_SCHEMA["AGE"].edges == tuple(float(e) for e in range(10, 91, 10))
    assert CENSUS_SCHEMA["HEALTH"].values == (1, 2, 3, 4, 5)
    assert CENSUS_SCHEMA["MARST"].values == (1, 2, 3, 4, 5, 6)
    assert CENSUS_SCHEMA["SEX"].values == (1, 2)
    assert {2, 73, 81, 111, 123, 124, 125} <= set(CENSUS_SCHEMA["EDUC"].values)
    assert {100, 200, 300, 651, 652, 700, 801, 802} <= set(CENSUS_SCHEMA["RACE"].values)
    assert 0 in CENSUS_SCHEMA["OCC"].values and len(CENSUS_SCHEMA["OCC"].values) == 24
    assert not CENSUS_SCHEMA.data_derived


@pytest.mark.parametrize("dependence", [0.0, 1.0])
def test_census_schema_covers_every_generated_value(dependence):
    frame, schema = census(100_000, dependence=dependence, seed=3)
    assert schema is CENSUS_SCHEMA and list(frame.columns) == list(CENSUS_COLUMNS)
    for col in CENSUS_COLUMNS:
        dom = schema[col]
        if isinstance(dom, dpaudit.Categorical):
            assert set(frame[col].unique().tolist()) <= set(dom.values), col
        else:
            assert frame[col].min() >= dom.edges[0] and frame[col].max() < dom.edges[-1], col
    assert frame["INCTOT"].between(0, 199_999).all() and frame["AGE"].between(15, 85).all()
    # the audit counts every column against the declared domains and raises nothing
    res = dpaudit.audit(frame, [*CENSUS_PRESET, "SEX ⊥ RACE"], schema=schema, exact=True, measures=("tvd",))
    assert res.n == len(frame) and res.dp is False and not res.schema_data_derived


def test_census_is_plausible():
    frame, _ = census(100_000, seed=4)
    employed = frame["OCC"] != 0
    assert 0.45 < employed.mean() < 0.7
    young, old = frame["AGE"] < 20, frame["AGE"] >= 75
    assert (frame.loc[young, "MARST"] == 6).mean() > 0.9 and (frame.loc[old, "MARST"] == 5).mean() > 0.25
    assert frame.loc[frame["AGE"] == 15, "EDUC"].max() <= 40  # at most Grade 9 at 15
    by_educ = frame[employed].groupby(frame["EDUC"] >= 111)["INCTOT"].median()
    assert by_educ[True] > 1.5 * by_educ[False]
    health = frame["HEALTH"].value_counts(normalize=True).sort_index()
    assert np.allclose(health.to_numpy(), [0.30, 0.31, 0.25, 0.10, 0.04], atol=0.03)


def test_census_is_seeded_and_prefix_stable():
    a, _ = census(1_000, seed=9)
    assert a.equals(census(1_000, seed=9)[0])
    assert not a.equals(census(1_000, seed=10)[0])
    # row i depends only on (seed, dependence, i): a longer table starts with the shorter one,
    # across the 65,536-row generation blocks too
    long_, _ = census(140_000, seed=9)
    assert long_.head(1_000).equals(a)
    assert long_.head(70_000).equals(census(70_000, seed=9)[0])


def test_census_dependence_changes_only_health():
    a, _ = census(20_000, dependence=0.0, seed=2)
    b, _ = census(20_000, dependence=0.8, seed=2)
    others = [c for c in CENSUS_COLUMNS if c != "HEALTH"]
    assert a[others].equals(b[others])
    assert not a["HEALTH"].equals(b["HEALTH"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_rows": 0}, _message(WHOLE, name="n_rows", bounds=" >= 1", value=0)),
        ({"n_rows": 10.0}, _message(WHOLE, name="n_rows", bounds=" >= 1", value=10.0)),
        ({"n_rows": 10, "dependence": 1.5}, _message(NUMBER, name="dependence", bounds=" >= 0 and <= 1", value=1.5)),
        ({"n_rows": 10, "dependence": -0.1}, _message(NUMBER, name="dependence", bounds=" >= 0 and <= 1", value=-0.1)),
        ({"n_rows": 10, "dependence": math.nan},
         _message(NUMBER, name="dependence", bounds=" >= 0 and <= 1", value=math.nan)),
        ({"n_rows": 10, "seed": None}, _message(WHOLE, name="seed", bounds=" >= 0", value=None)),
        ({"n_rows": 10, "seed": -3}, _message(WHOLE, name="seed", bounds=" >= 0", value=-3)),
    ],
)
def test_census_input_errors(kwargs, match):
    with pytest.raises(DPAuditError, match=match):
        census(**kwargs)


# --------------------------------------------------------------------------------------------------
# census: the dependence knob
# --------------------------------------------------------------------------------------------------
def _u_tvd(frame: pd.DataFrame) -> float:
    return dpaudit.audit(frame, CENSUS_PRESET, schema=CENSUS_SCHEMA, exact=True, measures=("tvd",))["tvd"].value


def test_dependence_moves_u_mi_tvd_monotonically():
    levels = (0.0, 0.25, 0.5, 0.75, 1.0)
    values = [_u_tvd(census(200_000, dependence=d, seed=0)[0]) for d in levels]
    assert all(b > a for a, b in zip(values, values[1:])), values
    assert values[1] > 5 * values[0] and values[-1] > 0.1, values
    # at dependence 0 HEALTH is independent: the value is the finite-sample noise floor, the same
    # as with HEALTH shuffled (which removes any dependence and keeps the marginals)
    frame, _ = census(200_000, dependence=0.0, seed=0)
    floor = []
    for k in range(3):
        shuffled = frame.assign(HEALTH=np.random.default_rng(k).permutation(frame["HEALTH"].to_numpy()))
        floor.append(_u_tvd(shuffled))
    assert values[0] == pytest.approx(np.mean(floor), rel=0.3), (values[0], floor)


# --------------------------------------------------------------------------------------------------
# write_census
# --------------------------------------------------------------------------------------------------
def test_write_census_equals_census_for_any_chunking(tmp_path):
    n = 140_000  # three generation blocks
    expected, _ = census(n, dependence=0.3, seed=5)
    files = {}
    for chunk_rows in (30_000, 65_536, 1_000_000):
        out = write_census(tmp_path / f"c{chunk_rows}.parquet", n, dependence=0.3, seed=5, chunk_rows=chunk_rows)
        assert out == tmp_path / f"c{chunk_rows}.parquet"
        meta = pq.read_metadata(out)
        assert meta.num_rows == n and meta.num_row_groups == math.ceil(n / chunk_rows)
        kv = meta.metadata
        assert kv[b"dpaudit.n_rows"] == str(n).encode() and kv[b"dpaudit.seed"] == b"5"
        assert dpaudit.Schema.from_json(kv[b"dpaudit.schema"].decode()) == CENSUS_SCHEMA
        got = pd.read_parquet(out)
        assert got.equals(expected), chunk_rows
        files[chunk_rows] = got
    # the audit reads the file with the declared schema and sees the same table
    from_file = dpaudit.audit(str(tmp_path / "c30000.parquet"), CENSUS_PRESET, schema=CENSUS_SCHEMA, exact=True, measures=("tvd",))
    assert from_file["tvd"].per_criterion == pytest.approx(
        dpaudit.audit(expected, CENSUS_PRESET, schema=CENSUS_SCHEMA, exact=True, measures=("tvd",))["tvd"].per_criterion, rel=1e-12)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c1000000.parquet", "c30000.parquet", "c65536.parquet"]


def test_write_census_small_and_str_path(tmp_path):
    out = write_census(str(tmp_path / "small.parquet"), 7, seed=1, chunk_rows=3)
    assert pq.read_metadata(out).num_row_groups == 3
    assert pd.read_parquet(out).equals(census(7, seed=1)[0])
    # the file has the permissions of an ordinary new file (not a private temporary file's)
    (tmp_path / "plain").write_bytes(b"")
    assert out.stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777
    # overwriting an existing file replaces it
    write_census(out, 5, seed=2)
    assert pd.read_parquet(out).equals(census(5, seed=2)[0])


def test_write_census_leaves_no_temp_file_on_error(tmp_path, monkeypatch):
    target = tmp_path / "census.parquet"
    target.write_bytes(b"previous content")
    real_block = synthetic._block
    calls = []

    def failing_block(seed, index, dependence):
        calls.append(index)
        if index == 2:  # after two chunks have been written to the temporary file
            raise RuntimeError("generator failed")
        return real_block(seed, index, dependence)

    import sys

    monkeypatch.setattr(sys.modules["dpaudit.datasets.synthetic.census"], "_block", failing_block)  # its module
    with pytest.raises(RuntimeError, match="generator failed"):
        write_census(target, 3 * synthetic._BLOCK, chunk_rows=synthetic._BLOCK)
    assert calls == [0, 1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["census.parquet"]
    assert target.read_bytes() == b"previous content"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"chunk_rows": 0}, _message(WHOLE, name="chunk_rows", bounds=" >= 1", value=0)),
        ({"chunk_rows": 10.5}, _message(WHOLE, name="chunk_rows", bounds=" >= 1", value=10.5)),
        ({"n_rows": -1}, _message(WHOLE, name="n_rows", bounds=" >= 1", value=-1)),
        ({"dependence": 2}, _message(NUMBER, name="dependence", bounds=" >= 0 and <= 1", value=2)),
    ],
)
def test_write_census_input_errors(tmp_path, kwargs, match):
    args = {"n_rows": 10} | kwargs
    n_rows = args.pop("n_rows")
    with pytest.raises(DPAuditError, match=match):
        write_census(tmp_path / "x.parquet", n_rows, **args)
    assert list(tmp_path.iterdir()) == []


def test_write_census_missing_folder(tmp_path):
    with pytest.raises(DPAuditError, match="does not exist"):
        write_census(tmp_path / "nope" / "x.parquet", 10)


def test_registry_entry(monkeypatch):
    info = synthetic.INFO
    assert info.name == "census" and info.rows == synthetic.DEFAULT_ROWS == 1_000_000
    assert info.schema is CENSUS_SCHEMA and info.presets["paper"] == CENSUS_PRESET and info.files == ()
    monkeypatch.setattr(synthetic, "DEFAULT_ROWS", 1_000)
    frame = info.loader()
    assert frame.equals(census(1_000, dependence=0.5, seed=0)[0])
    assert info.to_dict()["columns"] == list(CENSUS_COLUMNS)
