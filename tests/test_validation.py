"""The shared argument checks: one function per kind of value, one message template per kind."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import (
    CHOICE,
    EVERY,
    FLAG,
    NUMBER,
    POSITIVE,
    SEED,
    SOME,
    UNIT,
    WHOLE,
    flag,
    number,
    number_array,
    one_of,
    positive,
    seed_value,
    some_of,
    unit_interval,
    whole_number,
)


def test_accepted_values_come_back_in_their_canonical_type():
    assert whole_number("k", np.int64(3), minimum=1) == 3 and type(whole_number("k", np.int64(3))) is int
    assert number("t", 2, low=0, low_open=True) == 2.0 and positive("epsilon", np.float32(0.5)) == 0.5
    assert unit_interval("alpha", 0.01) == 0.01 and one_of("cells", "domain", ("domain", "observed")) == "domain"
    assert seed_value("seed", None) is None and seed_value("seed", 7) == 7
    assert whole_number("n", 4, minimum=2, even=True) == 4 and flag("on", np.bool_(True)) is True
    assert some_of("over", ["records", "models"], ("models", "records")) == ("models", "records")
    assert some_of("over", "records", ("models", "records")) == ("records",)
    arr = number_array("n", np.array([[2, 3]]), integer=True, low=2)
    assert arr.dtype == np.float64 and arr.shape == (1, 2) and number_array("p", 0.5, low=0, high=1).ndim == 0


@pytest.mark.parametrize("check, args, template, fields", [
    (whole_number, ("k", 0), WHOLE, {"name": "k", "bounds": " >= 1", "value": 0}),
    (whole_number, ("k", 2.0), WHOLE, {"name": "k", "bounds": " >= 1", "value": 2.0}),
    (whole_number, ("k", True), WHOLE, {"name": "k", "bounds": " >= 1", "value": True}),
    (number, ("t", math.nan), NUMBER, {"name": "t", "bounds": " > 0", "value": math.nan}),
    (number, ("t", "1"), NUMBER, {"name": "t", "bounds": " > 0", "value": "1"}),
    (positive, ("epsilon", -1.0), POSITIVE, {"name": "epsilon", "value": -1.0}),
    (positive, ("epsilon", math.inf), POSITIVE, {"name": "epsilon", "value": math.inf}),
    (unit_interval, ("alpha", 1.0), UNIT, {"name": "alpha", "hint": "", "value": 1.0}),
    (one_of, ("cells", "bogus", ("domain", "observed")), CHOICE,
     {"name": "cells", "choices": "domain, observed", "value": "bogus"}),
    (one_of, ("cells", ["unhashable"], ("domain",)), CHOICE, {"name": "cells", "choices": "domain", "value": ["unhashable"]}),
    (seed_value, ("seed", -1), SEED, {"name": "seed", "value": -1}),
    (flag, ("fpc", 1), FLAG, {"name": "fpc", "value": 1}),
    (some_of, ("over", ("models", "models"), ("models", "records")), SOME,
     {"name": "over", "choices": "models, records", "value": ("models", "models")}),
    (some_of, ("over", [], ("models", "records")), SOME, {"name": "over", "choices": "models, records", "value": []}),
    (some_of, ("over", [["models"]], ("models",)), SOME, {"name": "over", "choices": "models", "value": [["models"]]}),
])
def test_refusals_use_the_shared_templates(check, args, template, fields):
    kwargs = {"minimum": 1} if check is whole_number else {"low": 0.0, "low_open": True} if check is number else {}
    with pytest.raises(DPAuditError) as info:
        check(*args, **kwargs)
    assert str(info.value) == template.format(**fields)


@pytest.mark.parametrize("kwargs, bounds", [
    ({"minimum": 2, "even": True}, " >= 2 and even"),
    ({"even": True}, " and even"),
    ({"minimum": 1, "maximum": 4, "hint": " (below the pool)"}, " >= 1 and <= 4 (below the pool)"),
])
def test_whole_numbers_can_be_even_and_carry_a_hint(kwargs, bounds):
    for bad in (5, 7.0):
        with pytest.raises(DPAuditError) as info:
            whole_number("n", bad, **kwargs)
        assert str(info.value) == WHOLE.format(name="n", bounds=bounds, value=bad)


def test_a_hint_follows_the_bounds_of_a_number():
    with pytest.raises(DPAuditError) as info:
        number("delta", 1.0, low=0, high=1, high_open=True, hint=" (well below 1/n)")
    assert str(info.value) == NUMBER.format(name="delta", bounds=" >= 0 and < 1 (well below 1/n)", value=1.0)


@pytest.mark.parametrize("value, first, kwargs, kind, bounds", [
    ([0.5, 1.5, 2.0], 1.5, {"low": 0, "high": 1}, "a finite number", " >= 0 and <= 1"),
    (np.array([[0.2], [np.nan]]), math.nan, {"low": 0, "high": 1}, "a finite number", " >= 0 and <= 1"),
    ([0.0, 0.5], 0.0, {"low": 0, "low_open": True}, "a finite number", " > 0"),
    ([3, 2.5], 2.5, {"integer": True, "low": 2}, "an integer", " >= 2"),
    ([3, np.inf], math.inf, {"integer": True}, "an integer", ""),
    ([True, False], True, {}, "a finite number", ""),
    ("abc", "abc", {}, "a finite number", ""),
    (None, None, {"integer": True, "low": 2, "hint": " (2 scores)"}, "an integer", " >= 2 (2 scores)"),
    ([[1], [2, 3]], [[1], [2, 3]], {}, "a finite number", ""),
])
def test_every_element_of_an_array_is_checked(value, first, kwargs, kind, bounds):
    with pytest.raises(DPAuditError) as info:
        number_array("x", value, **kwargs)
    assert str(info.value) == EVERY.format(name="x", kind=kind, bounds=bounds, value=first)


def test_the_error_class_can_be_chosen():
    with pytest.raises(DataError, match="pool_size must be an integer >= 2"):
        whole_number("pool_size", 1, minimum=2, error=DataError)
