"""Tests of fairness criteria φ = (P, O, A): parsing, printing, validation (dpaudit.criteria)."""

from __future__ import annotations

import pytest

from dpaudit import Criterion, CriterionError, parse_criteria
from dpaudit._errors import DPAuditError
from dpaudit.criteria import check_columns


# -- parsing ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "sex ⊥ income | education-num",
        "sex _|_ income | education-num",
        "sex ⫫ income | education-num",
        "sex⊥income|education-num",
        "sex_|_income|education-num",
        "  sex \t⊥\n income  |   education-num  ",
    ],
)
def test_parse_with_admissible(text):
    c = Criterion.parse(text)
    assert c.protected == ("sex",)
    assert c.outcome == ("income",)
    assert c.admissible == ("education-num",)
    assert c == Criterion(("sex",), ("income",), ("education-num",))


@pytest.mark.parametrize("text", ["sex ⊥ income", "sex _|_ income", " sex⊥ income "])
def test_parse_without_admissible(text):
    c = Criterion.parse(text)
    assert (c.protected, c.outcome, c.admissible) == (("sex",), ("income",), ())


def test_parse_multiple_columns_per_side_keeps_order():
    c = Criterion.parse("sex,race ⊥ income , occupation | age,  education-num")
    assert c.protected == ("sex", "race")
    assert c.outcome == ("income", "occupation")
    assert c.admissible == ("age", "education-num")
    assert c.columns == ("age", "education-num", "sex", "race", "income", "occupation")


def test_ascii_separator_inside_admissible_side_is_not_confused_with_bar():
    c = Criterion.parse("race _|_ is_recid | age_cat")
    assert c.outcome == ("is_recid",)
    assert c.admissible == ("age_cat",)


def test_column_names_with_spaces_and_punctuation_survive():
    c = Criterion.parse("hours-per-week ⊥ native country | marital.status")
    assert c.protected == ("hours-per-week",)
    assert c.outcome == ("native country",)
    assert c.admissible == ("marital.status",)


def test_columns_order_is_admissible_protected_outcome():
    assert Criterion.parse("p ⊥ o | a").columns == ("a", "p", "o")
    assert Criterion.parse("p ⊥ o").columns == ("p", "o")


# -- str round trip ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("sex ⊥ income | education-num", "sex ⊥ income | education-num"),
        ("sex _|_ income", "sex ⊥ income"),
        ("sex,race ⊥ income", "sex, race ⊥ income"),
        ("  a ,b⫫c|d,e ", "a, b ⊥ c | d, e"),
    ],
)
def test_str_is_canonical_and_round_trips(text, expected):
    c = Criterion.parse(text)
    assert str(c) == expected
    again = Criterion.parse(str(c))
    assert again == c
    assert str(again) == expected


def test_str_of_constructed_criterion():
    assert str(Criterion(("a", "b"), ("c",))) == "a, b ⊥ c"


# -- constructor ------------------------------------------------------------------------------------
def test_constructor_accepts_single_strings_and_lists():
    c = Criterion("sex", "income", "age")  # type: ignore[arg-type]
    assert (c.protected, c.outcome, c.admissible) == (("sex",), ("income",), ("age",))
    c = Criterion(["sex", "race"], ["income"])  # type: ignore[arg-type]
    assert c.protected == ("sex", "race") and isinstance(c.protected, tuple)
    assert c.admissible == ()


def test_criteria_are_hashable_and_comparable():
    a = Criterion.parse("sex ⊥ income")
    b = Criterion.parse("sex _|_ income")
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Criterion.parse("income ⊥ sex")}) == 2
    with pytest.raises(AttributeError):
        a.protected = ("race",)  # type: ignore[misc]


def test_constructor_empty_protected():
    with pytest.raises(CriterionError, match="at least one protected attribute"):
        Criterion((), ("income",))


def test_constructor_empty_outcome():
    with pytest.raises(CriterionError, match="at least one outcome attribute"):
        Criterion(("sex",), ())


@pytest.mark.parametrize("bad", [("",), ("  ",), (3,), ("sex", None)])
def test_constructor_rejects_blank_or_non_string_names(bad):
    with pytest.raises(CriterionError, match="protected attributes must be non-empty column names"):
        Criterion(bad, ("income",))


def test_constructor_repeated_column_on_one_side():
    with pytest.raises(CriterionError, match=r"admissible attributes repeat a column: \('a', 'a'\)"):
        Criterion(("p",), ("o",), ("a", "a"))


@pytest.mark.parametrize(
    "args, shared, first, second",
    [
        ((("sex",), ("sex",)), "'sex'", "protected", "outcome"),
        ((("sex",), ("y",), ("sex",)), "'sex'", "protected", "admissible"),
        ((("p",), ("y", "a"), ("a",)), "'a'", "outcome", "admissible"),
        ((("a", "b"), ("b", "a")), "'a', 'b'", "protected", "outcome"),
    ],
)
def test_constructor_overlapping_sides(args, shared, first, second):
    with pytest.raises(CriterionError) as info:
        Criterion(*args)
    msg = str(info.value)
    assert f"column(s) {shared} appear in both the {first} and the {second} attributes" in msg
    assert "one side only" in msg


# -- parse errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["sex income", "sex | income", "", "sex _| income", "sex ⊤ income"])
def test_parse_without_independence_symbol(text):
    with pytest.raises(CriterionError, match=r"must contain exactly one '⊥' \(or '_\|_'\)"):
        Criterion.parse(text)


@pytest.mark.parametrize("text", ["sex ⊥ income ⊥ race", "sex _|_ income ⊥ race", "a ⫫ b _|_ c", "a ⊥⊥ b"])
def test_parse_with_two_independence_symbols(text):
    with pytest.raises(CriterionError, match="exactly one '⊥'") as info:
        Criterion.parse(text)
    assert repr(text) in str(info.value)  # the message quotes the user's text


@pytest.mark.parametrize("text", ["⊥ income", "  ⊥ income | age", " , ⊥ income"])
def test_parse_empty_protected_side(text):
    with pytest.raises(CriterionError, match=r"(no protected attribute|empty column name in the protected)"):
        Criterion.parse(text)


def test_parse_empty_protected_side_message():
    with pytest.raises(CriterionError, match=r"criterion ' ⊥ income' has no protected attribute; write e\.g\."):
        Criterion.parse(" ⊥ income")


@pytest.mark.parametrize("text", ["sex ⊥", "sex ⊥   ", "sex ⊥ | age"])
def test_parse_empty_outcome_side(text):
    with pytest.raises(CriterionError, match="has no outcome attribute"):
        Criterion.parse(text)


@pytest.mark.parametrize("text", ["sex ⊥ income |", "sex ⊥ income |   "])
def test_parse_empty_admissible_side_after_bar(text):
    with pytest.raises(CriterionError, match="has no admissible attribute"):
        Criterion.parse(text)


@pytest.mark.parametrize(
    "text, side",
    [("sex, ⊥ income", "protected"), ("sex ⊥ income,,race", "outcome"), ("sex ⊥ income | a,", "admissible")],
)
def test_parse_empty_column_name_in_list(text, side):
    with pytest.raises(CriterionError, match=f"empty column name in the {side} attributes"):
        Criterion.parse(text)


@pytest.mark.parametrize("text", ["sex ⊥ income | age | race", "sex ⊥ income || age", "a _|_ b | c | d"])
def test_parse_two_bars(text):
    with pytest.raises(CriterionError, match=r"more than one '\|'; list admissible columns with commas"):
        Criterion.parse(text)


@pytest.mark.parametrize(
    "text, first, second",
    [
        ("sex ⊥ sex", "protected", "outcome"),
        ("sex ⊥ income | sex", "protected", "admissible"),
        ("sex ⊥ income | income", "outcome", "admissible"),
        ("sex, race ⊥ income, race", "protected", "outcome"),
    ],
)
def test_parse_overlapping_sets(text, first, second):
    with pytest.raises(CriterionError, match=f"appear in both the {first} and the {second} attributes"):
        Criterion.parse(text)


@pytest.mark.parametrize(
    "text, side",
    [("sex, sex ⊥ income", "protected"), ("sex ⊥ income, income", "outcome"), ("s ⊥ i | a, b , a", "admissible")],
)
def test_parse_repeated_column(text, side):
    with pytest.raises(CriterionError, match=f"{side} attributes repeat a column"):
        Criterion.parse(text)


@pytest.mark.parametrize("bad", [None, 3, ["sex ⊥ income"], b"sex _|_ income"])
def test_parse_non_string(bad):
    with pytest.raises(CriterionError, match="a criterion must be a string like 'sex ⊥ income'"):
        Criterion.parse(bad)  # type: ignore[arg-type]


def test_criterion_errors_are_dpaudit_value_errors():
    with pytest.raises(DPAuditError):
        Criterion.parse("nope")
    with pytest.raises(ValueError):
        Criterion.parse("nope")


# -- parse_criteria ---------------------------------------------------------------------------------
def test_parse_criteria_single_string():
    out = parse_criteria("sex ⊥ income")
    assert out == (Criterion(("sex",), ("income",)),)
    assert isinstance(out, tuple)


def test_parse_criteria_single_criterion_object():
    c = Criterion(("sex",), ("income",))
    out = parse_criteria(c)
    assert out == (c,)
    assert out[0] is c


def test_parse_criteria_mixed_list_keeps_order():
    c = Criterion(("race",), ("income",), ("age",))
    out = parse_criteria(["sex ⊥ income", c, "sex,race _|_ income | education-num"])
    assert [str(x) for x in out] == ["sex ⊥ income", "race ⊥ income | age", "sex, race ⊥ income | education-num"]
    assert out[1] is c


def test_parse_criteria_tuple_and_generator():
    assert len(parse_criteria(("a ⊥ b", "c ⊥ d"))) == 2
    assert len(parse_criteria(s for s in ["a ⊥ b"])) == 1


def test_parse_criteria_refuses_duplicates():
    # a repeated criterion would be summed twice over F (issue 26): refused, once, here
    with pytest.raises(CriterionError, match=r"criterion 'a ⊥ b' is given twice \(criteria 1 and 2\)"):
        parse_criteria(["a ⊥ b", "a _|_ b"])


@pytest.mark.parametrize("empty", [[], (), iter([])])
def test_parse_criteria_empty(empty):
    with pytest.raises(CriterionError, match="no criteria given; pass at least one"):
        parse_criteria(empty)


def test_parse_criteria_bad_item_is_named():
    with pytest.raises(CriterionError, match=r"expected a Criterion or a string like 'sex ⊥ income', got 42"):
        parse_criteria(["sex ⊥ income", 42])


def test_parse_criteria_propagates_parse_errors():
    with pytest.raises(CriterionError, match=r"'sex ⊥ income ⊥ race' must contain exactly one"):
        parse_criteria(["a ⊥ b", "sex ⊥ income ⊥ race"])


# -- check_columns ----------------------------------------------------------------------------------
def test_check_columns_accepts_known_columns():
    crits = parse_criteria(["sex ⊥ income | age", "race ⊥ income"])
    assert check_columns(crits, ["age", "sex", "race", "income", "extra"]) is None
    assert check_columns(crits, iter(["age", "sex", "race", "income"])) is None


def test_check_columns_names_every_unknown_column_and_the_available_ones():
    crits = parse_criteria(["sex ⊥ income", "gender ⊥ salary | age"])
    with pytest.raises(CriterionError) as info:
        check_columns(crits, ["sex", "income", "age"])
    msg = str(info.value)
    assert "criterion 'gender ⊥ salary | age' uses unknown column(s) 'gender', 'salary'" in msg
    assert "the data have: age, income, sex" in msg
    assert "'age'" not in msg.split(";")[0]


def test_check_columns_reports_first_failing_criterion():
    crits = parse_criteria(["a ⊥ b", "c ⊥ d"])
    with pytest.raises(CriterionError, match=r"criterion 'a ⊥ b' uses unknown column\(s\) 'b'"):
        check_columns(crits, ["a", "c"])


def test_check_columns_empty_criteria():
    assert check_columns([], []) is None


def test_bar_before_independence_symbol_is_rejected():
    from dpaudit import Criterion, CriterionError

    with pytest.raises(CriterionError, match=r"has '\|' before '⊥'"):
        Criterion.parse("sex|a ⊥ income")


@pytest.mark.parametrize("bad", [None, 5])
def test_parse_criteria_rejects_non_iterables(bad):
    from dpaudit import CriterionError, parse_criteria

    with pytest.raises(CriterionError, match="expected criteria as a string"):
        parse_criteria(bad)
