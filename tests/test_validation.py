"""The shared argument checks: one function per kind of value, one message template per kind."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit._errors import DataError, DPAuditError
from dpaudit._validation import (
    CHOICE,
    NUMBER,
    POSITIVE,
    SEED,
    UNIT,
    WHOLE,
    number,
    one_of,
    positive,
    seed_value,
    unit_interval,
    whole_number,
)


def test_accepted_values_come_back_in_their_canonical_type():
    assert whole_number("k", np.int64(3), minimum=1) == 3 and type(whole_number("k", np.int64(3))) is int
    assert number("t", 2, low=0, low_open=True) == 2.0 and positive("epsilon", np.float32(0.5)) == 0.5
    assert unit_interval("alpha", 0.01) == 0.01 and one_of("cells", "domain", ("domain", "observed")) == "domain"
    assert seed_value("seed", None) is None and seed_value("seed", 7) == 7


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
])
def test_refusals_use_the_shared_templates(check, args, template, fields):
    kwargs = {"minimum": 1} if check is whole_number else {"low": 0.0, "low_open": True} if check is number else {}
    with pytest.raises(DPAuditError) as info:
        check(*args, **kwargs)
    assert str(info.value) == template.format(**fields)


def test_the_error_class_can_be_chosen():
    with pytest.raises(DataError, match="pool_size must be an integer >= 2"):
        whole_number("pool_size", 1, minimum=2, error=DataError)
