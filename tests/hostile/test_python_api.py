"""Hostile arguments to the public Python API: each is a DPAuditError (a ValueError) whose one-line message
names the argument, never a TypeError/AttributeError from deep inside, and never silently accepted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpaudit
from dpaudit import Binned, Budget, Categorical, Criterion, DPAuditError, Schema, audit
from dpaudit._validation import NUMBER
from dpaudit.mia.designs import keep_matrix
from dpaudit.mia.evaluate import FPR_FLOOR_HINT, MIN_FPR, evaluate
from dpaudit.mia.scores import ScoreSet
from dpaudit.mia.train import load_run, train_run

FRAME = pd.DataFrame({"sex": ["F", "M"] * 50, "y": [0, 1, 1, 0] * 25})
SCHEMA = Schema({"sex": Categorical(["F", "M"]), "y": Categorical([0, 1])})
KEEP = keep_matrix(8, 20, seed=0)
SCORES = ScoreSet(np.random.default_rng(0).normal(size=KEEP.shape), KEEP, 10, 20)
NOWHERE = "/nonexistent-dpaudit-folder/run"


def bad_fpr(value):
    """The message of a target FPR :func:`evaluate` refuses."""
    return NUMBER.format(name="fpr", bounds=f" >= {MIN_FPR:g} and < 1{FPR_FLOOR_HINT}", value=value)


def fair(private=True, **kw):
    """An audit of FRAME with ``kw``; exact unless ``kw`` gives epsilon (or ``private=False``: neither)."""
    choice = {} if "epsilon" in kw or not private else {"exact": True}
    return lambda: audit(FRAME, "sex ⊥ y", **{"schema": SCHEMA, **choice, **kw})


CASES = {
    # audit(): data, criteria, schema
    "data None": (lambda: audit(None, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)), "cannot read data of type"),
    "data int": (lambda: audit(5, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)), "cannot read data of type"),
    "data dict": (lambda: audit({"sex": ["F"]}, "sex ⊥ y", schema=SCHEMA, exact=True, measures=("tvd",)), "cannot read data of type"),
    "criteria None": (lambda: audit(FRAME, None, schema=SCHEMA, exact=True, measures=("tvd",)), "expected criteria as a string"),
    "criteria int": (lambda: audit(FRAME, 5, schema=SCHEMA, exact=True, measures=("tvd",)), "expected criteria as a string"),
    "criteria empty": (lambda: audit(FRAME, [], schema=SCHEMA, exact=True, measures=("tvd",)), "no criteria given"),
    "criteria no outcome": (lambda: audit(FRAME, "sex ⊥", schema=SCHEMA, exact=True, measures=("tvd",)), "outcome"),
    "criteria same column twice": (lambda: audit(FRAME, "sex ⊥ sex", schema=SCHEMA, exact=True, measures=("tvd",)), "sex"),
    "schema int": (fair(schema=5), "schema must be a Schema"),
    "schema dict": (fair(schema={"sex": Categorical(["F", "M"])}), "schema must be a Schema"),
    "schema missing": (fair(schema=None), "no schema given"),
    "schema lacks column": (fair(schema=Schema({"sex": Categorical(["F", "M"])})), "not declared in the schema"),
    # audit(): measures and options
    "measures None (the default) without epsilon or exact": (fair(private=False, measures=None), "say how private the audit is"),
    "measures int": (fair(measures=5), "measures must be a measure name"),
    "measures list of int": (fair(measures=[5]), "measures must be names or Measure objects"),
    "measures empty": (fair(measures=[]), "no measures requested"),
    "measures unknown": (fair(measures="nope"), "unknown measure"),
    "progress not callable": (fair(progress="loud"), "progress must be a callable"),
    "k bool": (fair(measures="tc", k=True), "k must be an integer"),
    "k float": (fair(measures="tc", k=2.5), "k must be an integer"),
    "cells unknown": (fair(measures="tc", cells="all"), "cells must be one of"),
    "semantics unknown": (fair(measures="repair", semantics="sql"), "semantics must be one of"),
    "time_limit bool": (fair(measures="repair", time_limit=True), "time_limit must be a finite number"),
    "time_limit negative": (fair(measures="repair", time_limit=-1), "time_limit must be a finite number"),
    # an option given as None is a value like any other: refused (not read as "not given")
    "semantics None": (fair(measures="repair", semantics=None), "semantics must be one of ci, bag, set, got None"),
    "work_limit None": (fair(measures="repair", work_limit=None), "work_limit must be a finite number > 0, got None"),
    "work_limit bool": (fair(measures="repair", work_limit=True), "work_limit must be a finite number"),
    "k None": (fair(measures="tc", k=None), "k must be an integer >= 1, got None"),
    "cells None": (fair(measures="tc", cells=None), "cells must be one of domain, observed, got None"),
    "k None with two measures": (fair(measures=("tc", "repair"), k=None), "k must be an integer >= 1, got None"),
    "semantics None without repair": (fair(measures="tvd", semantics=None),
                                      "option semantics configures repair, which is not among the measures"),
    "name_cells None without tc": (fair(measures="tvd", name_cells=None), "option name_cells configures tc"),
    "semantics None with a Repair object": (fair(measures=[dpaudit.measures.Repair()], semantics=None),
                                            "option semantics configures repair, which is not among"),
    "Repair semantics None": (lambda: dpaudit.measures.Repair(semantics=None), "semantics must be one of"),
    "Repair work_limit None": (lambda: dpaudit.measures.Repair(work_limit=None), "work_limit must be a finite number"),
    "Repair time_limit text": (lambda: dpaudit.measures.Repair(time_limit="5"), "time_limit must be a finite number"),
    "TopContribution k None": (lambda: dpaudit.measures.TopContribution(k=None), "k must be an integer"),
    "TopContribution cells None": (lambda: dpaudit.measures.TopContribution(cells=None), "cells must be one of"),
    "u_r work_limit None": (lambda: dpaudit.measures.repair.u_r(np.array([[[10, 0], [0, 10]]]), work_limit=None),
                            "work_limit must be a finite number > 0, got None"),
    "u_r semantics None": (lambda: dpaudit.measures.repair.u_r(np.array([[[10, 0], [0, 10]]]), semantics=None),
                           "semantics must be one of"),
    "repair_wcnf semantics None": (lambda: dpaudit.repair_wcnf(FRAME, "sex ⊥ y", schema=SCHEMA, semantics=None),
                                   "semantics must be one of"),
    # audit(): privacy
    "epsilon bool": (fair(epsilon=True), "epsilon must be a positive finite number"),
    "epsilon str": (fair(epsilon="1"), "epsilon must be a positive finite number"),
    "epsilon zero": (fair(epsilon=0.0), "epsilon must be a positive finite number"),
    "epsilon negative": (fair(epsilon=-1.0), "epsilon must be a positive finite number"),
    "epsilon nan": (fair(epsilon=float("nan")), "epsilon must be a positive finite number"),
    "epsilon inf": (fair(epsilon=float("inf")), "epsilon must be a positive finite number"),
    "epsilon denormal": (fair(epsilon=1e-320), "below the smallest dpaudit releases with"),
    "epsilon tiny share": (fair(epsilon=1.0, measures=("tvd", "tc"), split={"tvd": 1e-300, "tc": 1 - 1e-300}),
                           "below the smallest dpaudit releases with"),
    "seed str": (fair(epsilon=1.0, seed="abc"), "seed must be a non-negative integer"),
    "seed float": (fair(epsilon=1.0, seed=1.5), "seed must be a non-negative integer"),
    "seed negative": (fair(epsilon=1.0, seed=-1), "seed must be a non-negative integer"),
    "budget str": (fair(epsilon=1.0, budget="x"), "budget must be a dpaudit Budget"),
    "budget too small": (fair(epsilon=1.0, budget=Budget(0.5)), "asks for epsilon=1"),
    "split list": (fair(epsilon=1.0, split=[1.0]), "budget split must map each measure"),
    "split bool": (fair(epsilon=1.0, measures="tvd", split={"tvd": True}), "fractions must be positive numbers"),
    "split nan": (fair(epsilon=1.0, measures="tvd", split={"tvd": float("nan")}), "fractions must be positive numbers"),
    "split without epsilon": (fair(split={"tvd": 1.0}), "it needs epsilon"),
    # schema objects
    "Schema None": (lambda: Schema(None), "must be a mapping"),
    "Schema bad domain": (lambda: Schema({"a": [1, 2]}), "domain must be Categorical or Binned"),
    "Categorical None": (lambda: Categorical(None), "must be a list of values"),
    "Categorical str": (lambda: Categorical("FM"), "must be a list of values"),
    "Categorical list value": (lambda: Categorical([[1], [2]]), "must be single values"),
    "Binned None": (lambda: Binned(None), "bin edges must be numbers"),
    "Binned str": (lambda: Binned("0123"), "bin edges must be numbers in a list"),
    "Binned overflow": (lambda: Binned([0, 10**400]), "bin edges must be numbers"),
    "Binned missing int": (lambda: Binned([0, 1], missing=5), "label must be a string"),
    "Schema.from_json None": (lambda: Schema.from_json(None), "must be a JSON text or the path"),
    "Criterion.parse None": (lambda: Criterion.parse(None), "criterion"),
    # budgets
    "Budget negative": (lambda: Budget(-1), "total_epsilon must be a positive finite number"),
    "Budget str": (lambda: Budget("1"), "total_epsilon must be a positive finite number"),
    "Budget label None": (lambda: Budget(1).spend(0.5, None), "label must be a non-empty string"),
    "Budget spend_many str": (lambda: Budget(1).spend_many("tvd"), "list of (label, epsilon) pairs"),
    # membership inference
    "ScoreSet.load None": (lambda: ScoreSet.load(None), "takes the path of a score file"),
    "ScoreSet text": (lambda: ScoreSet("abc", KEEP, 10, 20), "array of real numbers"),
    "ScoreSet None": (lambda: ScoreSet(None, None, None, None), "score"),
    # ScoreSet shapes: ragged rows, object arrays of arrays, other ranks, mismatched shapes, non-numeric dtypes
    "ScoreSet ragged score": (lambda: ScoreSet([[0.0] * 20] * 7 + [[0.0] * 19], KEEP, 10, 20),
                              "score is ragged (rows of 19, 20 entries): it must be a rectangular array of shape "
                              "(n_models, n_records)"),
    "ScoreSet ragged keep": (lambda: ScoreSet(SCORES.score, [list(r) for r in KEEP[:7]] + [list(KEEP[7][:3])], 10, 20),
                             "keep is ragged (rows of 3, 20 entries)"),
    "ScoreSet ragged both": (lambda: ScoreSet([[0.0, 1.0], [0.0]], [[True, False], [True]], 1, 2), "score is ragged"),
    "ScoreSet ragged deep": (lambda: ScoreSet([[[0.0], [0.0, 1.0]]] * 8, KEEP, 10, 20), "score is ragged"),
    "ScoreSet object rows": (lambda: ScoreSet(np.array([SCORES.score[0], SCORES.score[1][:3]], dtype=object), KEEP,
                                              10, 20), "score is ragged (rows of 3, 20 entries)"),
    "ScoreSet object keep rows": (lambda: ScoreSet(SCORES.score, np.array([KEEP[0], KEEP[1][:3]], dtype=object),
                                                   10, 20), "keep is ragged"),
    "ScoreSet keep 1-D": (lambda: ScoreSet(SCORES.score, KEEP[0], 10, 20), "keep must be 2-D (n_models, n_records), "
                                                                           "got shape (20,)"),
    "ScoreSet score 3-D": (lambda: ScoreSet(SCORES.score[..., None], KEEP, 10, 20), "score must be 2-D"),
    "ScoreSet shapes differ": (lambda: ScoreSet(SCORES.score[:, :10], KEEP, 10, 20),
                               "score and keep must have the same shape, got (8, 10) and (8, 20); both are (n_models, n_records)"),
    "ScoreSet keep transposed": (lambda: ScoreSet(SCORES.score, KEEP.T, 10, 20), "must have the same shape"),
    "ScoreSet score text numbers": (lambda: ScoreSet(SCORES.score.astype(str), KEEP, 10, 20),
                                    "score must be an array of real numbers of shape (n_models, n_records), got dtype <U"),
    "ScoreSet score dates": (lambda: ScoreSet(np.zeros(KEEP.shape, "datetime64[s]"), KEEP, 10, 20),
                             "got dtype datetime64[s]"),
    "ScoreSet score huge int": (lambda: ScoreSet([[10**400] * 20] * 8, KEEP, 10, 20), "array of real numbers"),
    "ScoreSet score object complex": (lambda: ScoreSet(np.full(KEEP.shape, 1j, dtype=object), KEEP, 10, 20),
                                      "complex"),
    "ScoreSet ragged record_ids": (lambda: ScoreSet(SCORES.score, KEEP, 10, 20, record_ids=[1] * 19 + [[2]]),
                                   "record_ids is ragged: it must be a rectangular array of shape (20,)"),
    "evaluate None": (lambda: evaluate(None), "takes a ScoreSet"),
    "evaluate fpr str": (lambda: evaluate(SCORES, fpr="abc"), bad_fpr("abc")),
    "evaluate fpr None": (lambda: evaluate(SCORES, fpr=None), bad_fpr(None)),
    "evaluate fpr nested": (lambda: evaluate(SCORES, fpr=[[0.1]]), bad_fpr([0.1])),
    "evaluate fpr tiny": (lambda: evaluate(SCORES, fpr=(1e-300,)), bad_fpr(1e-300)),
    "evaluate fpr one": (lambda: evaluate(SCORES, fpr=(1.0,)), bad_fpr(1.0)),
    "evaluate n_boot float": (lambda: evaluate(SCORES, n_boot=1.5), "n_boot must be an integer"),
    "evaluate n_boot huge": (lambda: evaluate(SCORES, n_boot=10**8), "n_boot must be an integer"),
    "evaluate seed None": (lambda: evaluate(SCORES, seed=None, n_boot=0), "seed must be an integer"),
    "evaluate seed negative": (lambda: evaluate(SCORES, seed=-2, n_boot=0), "seed must be an integer"),
    "evaluate attack int": (lambda: evaluate(SCORES, attack=5), "attack"),
    "evaluate attack unknown": (lambda: evaluate(SCORES, attack="shadow"), "attack"),
    "evaluate level": (lambda: evaluate(SCORES, level=2), "level must be a number strictly between 0 and 1"),
    "evaluate strict str": (lambda: evaluate(SCORES, strict="abc", n_boot=0), "strict must be True or False"),
    "evaluate fpc str": (lambda: evaluate(SCORES, fpc="abc", n_boot=0), "fpc must be True or False"),
    "evaluate threshold": (lambda: evaluate(SCORES, threshold_kind="z", n_boot=0), "threshold must be one of"),
    "evaluate delta negative": (lambda: evaluate(SCORES, delta=-1, n_boot=0), "delta"),
    # training runs (refused before the run directory is looked at: /nonexistent is never reached)
    "train_run out None": (lambda: train_run(None, n_models=6, pool_size=100), "out_dir must be the path of a run"),
    "train_run out int": (lambda: train_run(5, n_models=6, pool_size=100), "out_dir must be the path of a run"),
    "train_run n_models huge": (lambda: train_run(NOWHERE, n_models=10**11, pool_size=100),
                                "n_models must be an integer >= 6 and <= 100000"),
    "train_run n_models float": (lambda: train_run(NOWHERE, n_models=8.0, pool_size=100), "n_models must be"),
    "train_run cells": (lambda: train_run(NOWHERE, n_models=10_000, pool_size=48_842), "more than the limit of"),
    "train_run pool str": (lambda: train_run(NOWHERE, n_models=6, pool_size="100"), "pool_size must be an integer"),
    "train_run pool odd": (lambda: train_run(NOWHERE, n_models=6, pool_size=101), "pool_size must be even under the "
                                                                                  "efficient design"),
    "train_run resume str": (lambda: train_run(NOWHERE, n_models=6, pool_size=100, resume="no"),
                             "resume must be True or False, got 'no'"),
    "train_run progress str": (lambda: train_run(NOWHERE, n_models=6, pool_size=100, progress="yes"),
                               "progress must be True or False, got 'yes'"),
    "train_run seed str": (lambda: train_run(NOWHERE, n_models=6, pool_size=100, seed="abc"), "seed must be"),
    "train_run model None": (lambda: train_run(NOWHERE, n_models=6, pool_size=100, model=None), "model must be"),
    "train_run design int": (lambda: train_run(NOWHERE, n_models=6, pool_size=100, design=1), "design must be one of"),
    "train_run label without data": (lambda: train_run(NOWHERE, n_models=6, pool_size=100, label="y"),
                                     "describe a data file"),
    "load_run None": (lambda: load_run(None), "load_run takes the path of a run directory, got NoneType"),
    "load_run int": (lambda: load_run(5), "load_run takes the path of a run directory, got int"),
    "load_run missing": (lambda: load_run(NOWHERE), "is not a directory"),
    "ScoreSet.save None": (lambda: SCORES.save(None), "ScoreSet.save takes the path of the file to write"),
    "ScoreSet.save list": (lambda: SCORES.save(["s.npz"]), "ScoreSet.save takes the path of the file to write"),
    # datasets
    "datasets.load None": (lambda: dpaudit.datasets.load(None), "dataset"),
    "datasets.load unknown": (lambda: dpaudit.datasets.load("nope"), "nope"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_call_is_a_one_line_dpaudit_error(name):
    call, fragment = CASES[name]
    with pytest.raises(DPAuditError) as info:
        call()
    message = str(info.value)
    assert fragment in message, message
    assert "\n" not in message


def test_object_arrays_of_plain_values_are_read_as_their_numbers():
    """An object array of floats and of booleans (e.g. from a pandas frame) is no ragged array."""
    scores = ScoreSet(SCORES.score.astype(object), KEEP.astype(object), 10, 20)
    assert np.array_equal(scores.score, SCORES.score) and np.array_equal(scores.keep, KEEP)


def test_name_cells_none_is_its_documented_default():
    """name_cells is the one option whose default is None: None given explicitly is that default."""
    result = audit(FRAME, "sex ⊥ y", schema=SCHEMA, measures="tc", name_cells=None, exact=True)
    assert result["tc"].options["name_cells"] is None
    assert result["tc"].value == audit(FRAME, "sex ⊥ y", schema=SCHEMA, measures="tc", exact=True)["tc"].value


def test_every_error_is_a_value_error_so_generic_handlers_catch_it():
    assert issubclass(DPAuditError, ValueError)
    for cls in (dpaudit.SchemaError, dpaudit.DataError, dpaudit.BudgetError, dpaudit.CriterionError,
                dpaudit.DatasetError):
        assert issubclass(cls, DPAuditError)


def test_a_refused_audit_spends_nothing():
    budget = Budget(1.0)
    with pytest.raises(DPAuditError):
        audit(FRAME, "sex ⊥ nope", schema=SCHEMA, epsilon=0.5, budget=budget, measures=("tvd",))
    with pytest.raises(DPAuditError):
        audit(FRAME, "sex ⊥ y", schema=SCHEMA, epsilon=0.5, budget=budget, measures=("tvd", "tc"),
              split={"tvd": 0.5, "tc": 0.6})
    assert budget.ledger == ()
