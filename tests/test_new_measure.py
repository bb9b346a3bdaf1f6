"""A new measure is one module plus its registration: a toy measure defined in this file only is
registered through ``dpaudit.measures.registered`` and then works in ``audit()`` (options by field
name), the command line (``--option``), the JSON round trip, ``str()``, the terminal, the HTML page
and the self-check — with no other file of the package touched."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpaudit import Categorical, DPAuditError, Schema, audit
from dpaudit._validation import number, whole_number
from dpaudit.cli import app
from dpaudit.details import Details, UnknownDetails, hook
from dpaudit.measures import MEASURES, Measure, NeighbourPair, WorstCase, register, registered, unregister
from dpaudit.report.html import MEANING, UNITS, render_audit
from dpaudit.report.json import read_json, render_json
from dpaudit.report.rich import print_audit

# -- the new measure: everything it needs, in one place ------------------------------------------------

@dataclass(frozen=True)
class GapDetails(Details):
    """Per criterion and block, the spread of positive-outcome counts between the protected groups."""

    spread: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class PositiveGap(Measure):
    """U_GAP: how unevenly the positive outcome falls on the protected groups, per block, as a share of n.

    For one criterion with counts ``c[a, p, o]`` and the positive outcome o⁺,

        U_GAP = scale · Σ_a (max_p c[a, p, o⁺] − min_p c[a, p, o⁺]) / n.

    Sensitivity (replace one tuple, n public): the tuple leaves one cell and enters another, so at most
    one positive count falls by 1 and one rises by 1; each block's max − min moves by at most the
    changes inside it, so the sum moves by at most 2, and U_GAP by at most 2·scale/n per criterion.

    Parameters
    ----------
    positive : int, default 1
        Index of the positive outcome in the outcome domain.
    scale : float, default 1.0
        Multiplies the value (a unit of account).
    """

    positive: int = 1
    scale: float = 1.0

    name = "gap"
    title = "U_GAP"
    reference = "toy measure of tests/test_new_measure.py"
    sensitivity_formula = "2·scale·|F|/n"
    upper = np.inf
    zero_iff_independent = False
    meaning = "U_GAP is the spread of positive outcomes between protected groups, per block, as a share of n."
    unit = "U_GAP (share of n, times scale)"
    details_types = (GapDetails,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "positive", whole_number("positive", self.positive, minimum=0))
        object.__setattr__(self, "scale", number("scale", self.scale, low=0.0, low_open=True))

    def _spread(self, counts: np.ndarray) -> np.ndarray:
        table = np.asarray(counts).reshape((-1,) + np.asarray(counts).shape[-2:])
        if self.positive >= table.shape[2]:
            raise DPAuditError(f"positive={self.positive} but the outcome has {table.shape[2]} values")
        column = table[:, :, self.positive]
        return column.max(axis=1) - column.min(axis=1)

    def value(self, counts: np.ndarray) -> float:
        n = np.asarray(counts).sum()
        return float(self.scale * self._spread(counts).sum() / n) if n else 0.0

    def criterion_sensitivity(self, conditional: bool, n: int) -> float:
        return 2.0 * self.scale / n

    def details(self, tables: Any) -> GapDetails:
        return GapDetails(tuple(tuple(int(v) for v in self._spread(t.counts)) for t in tables))

    @classmethod
    def worst_cases(cls) -> tuple[WorstCase, ...]:
        before = np.array([[[1, 1], [1, 1]]])  # one block, two groups, one positive tuple each
        after = np.array([[[1, 2], [1, 0]]])  # group 1's positive tuple becomes group 0's: the spread jumps by 2
        pair = NeighbourPair("gap", "p ⊥ o", before, after, "[[1, 1], [1, 1]] → [[1, 2], [1, 0]]")
        return (WorstCase(pair, cls(), lambda change, n: f"n·|ΔU_GAP| = {change * n:g} of the bound 2"),)


# -- data with known truth, and null data --------------------------------------------------------------

SCHEMA = Schema({"sex": Categorical(["F", "M"]), "group": Categorical(["a", "b"]), "y": Categorical([0, 1])})
#: F has 30 positive rows, M 10 (block a: 20 vs 5; block b: 10 vs 5): spreads 20 without A, 15 + 5 with A.
FRAME = pd.DataFrame({
    "sex": ["F"] * 50 + ["M"] * 50,
    "group": ["a"] * 30 + ["b"] * 20 + ["a"] * 30 + ["b"] * 20,
    "y": [1] * 20 + [0] * 10 + [1] * 10 + [0] * 10 + [1] * 5 + [0] * 25 + [1] * 5 + [0] * 15,
})
NULL = pd.DataFrame({"sex": ["F", "M"] * 50, "group": ["a"] * 100, "y": [0, 0, 1, 1] * 25})
CRITERIA = ["sex ⊥ y", "sex ⊥ y | group"]


@pytest.fixture
def gap():
    with registered(PositiveGap) as cls:
        yield cls
    assert "gap" not in MEASURES  # unregistered again: the other tests see the three built-in measures


def test_audit_takes_it_by_name_with_options_routed_by_field_name(gap):
    res = audit(FRAME, CRITERIA, schema=SCHEMA, measures=["tvd", "gap"], scale=2.0, exact=True)
    assert res["gap"].per_criterion == pytest.approx((2.0 * 20 / 100, 2.0 * (15 + 5) / 100))
    assert res["gap"].options == {"positive": 1, "scale": 2.0}
    assert res["gap"].details == GapDetails(((20,), (15, 5)))
    assert res["gap"].release.sensitivity == pytest.approx(2 * 2 * 2.0 / 100)  # 2·scale/n per criterion
    null = audit(NULL, CRITERIA, schema=SCHEMA, measures="gap", exact=True)
    assert null["gap"].value == 0.0  # both groups get 25 positive rows
    dp = audit(FRAME, CRITERIA, schema=SCHEMA, measures=[PositiveGap(scale=2.0), "tvd"], epsilon=1.0, seed=3)
    assert dp["gap"].release.scale == pytest.approx(0.08 / 0.5) and dp["gap"].details is None


@pytest.mark.parametrize("options, message", [
    ({"measures": ["gap"], "scale": -1.0}, "scale must be a finite number > 0"),
    ({"measures": ["gap"], "positive": 1.5}, "positive must be an integer"),
    ({"measures": ["tvd"], "scale": 2.0}, "option scale configures gap, which is not among the measures"),
    ({"measures": ["gap"], "scal": 2.0}, "unknown option 'scal'"),
])
def test_its_options_are_refused_before_any_row_is_read(gap, monkeypatch, options, message):
    import sys

    def spy(*args, **kwargs):
        raise AssertionError("the data were counted before the bad option was refused")

    monkeypatch.setattr(sys.modules["dpaudit.audit"], "count_tables", spy)
    with pytest.raises(DPAuditError, match=message):
        audit(FRAME, CRITERIA, schema=SCHEMA, **options)


def test_json_round_trip_and_every_renderer(gap):
    res = audit(FRAME, CRITERIA, schema=SCHEMA, measures=["gap", "tc"], scale=2.0, k=3, exact=True)
    doc = json.loads(render_json(res))
    assert doc["measures"]["gap"]["spread"] == [[20], [15, 5]]
    back = read_json(render_json(res))
    assert back["gap"].details == res["gap"].details and back.to_dict() == res.to_dict()

    text = str(back)
    assert "U_GAP" in text and "      spread: 20; 15, 5" in text  # the generic field table
    assert text == str(res)

    out = io.StringIO()
    from rich.console import Console

    print_audit(back, Console(file=out, width=140, color_system=None))
    assert "U_GAP details:" in out.getvalue() and "spread: 20; 15, 5" in out.getvalue()

    page = render_audit(back)
    assert page == render_audit(res)
    assert '<section id="details-gap"><h2>U_GAP details</h2>' in page
    assert "<td>spread</td><td>20; 15, 5</td>" in page
    assert MEANING["gap"] in page and UNITS["gap"] in page  # its sentence, and its figure's axis label
    assert 'id="cells"' in page and 'id="repair"' in page  # the built-in measures' sections are still there


def test_a_details_hook_replaces_the_field_table(gap):
    @dataclass(frozen=True)
    class Shown(GapDetails):
        def text_lines(self, m):
            return [f"      largest spread: {max(max(s) for s in self.spread)} rows"]

    res = audit(FRAME, CRITERIA, schema=SCHEMA, measures="gap", exact=True)
    details = Shown(res["gap"].details.spread)
    assert hook(details, "text_lines")(res["gap"]) == ["      largest spread: 20 rows"]
    assert hook(details, "rich_lines")(res["gap"])[0] == "[bold]U_GAP details[/bold]:"  # the rest is generic


def test_a_details_html_method_draws_its_own_section(gap):
    """The page draws a new measure's details with their own ``html`` when they define one (else the
    field table, above); the built-in details are drawn by the renderer (report._html_details)."""
    from dpaudit.report._html_details import details_html

    @dataclass(frozen=True)
    class Drawn(GapDetails):
        def html(self, result, m):
            return f"<p>largest spread {max(max(s) for s in self.spread)} of {m.title}</p>"

    res = audit(FRAME, CRITERIA, schema=SCHEMA, measures="gap", exact=True)
    assert details_html(Drawn(res["gap"].details.spread), res, res["gap"]) == "<p>largest spread 20 of U_GAP</p>"
    assert "<td>spread</td>" in details_html(res["gap"].details, res, res["gap"])


def test_a_saved_document_outlives_the_registration():
    with registered(PositiveGap):
        saved = render_json(audit(FRAME, CRITERIA, schema=SCHEMA, measures="gap", exact=True))
    back = read_json(saved)  # "gap" is no longer registered: its details are kept as they are
    assert isinstance(back["gap"].details, UnknownDetails)
    assert json.loads(render_json(back)) == json.loads(saved)
    assert "      spread: 20; 15, 5" in str(back) and 'id="details-gap"' in render_audit(back)


def test_the_command_line_sets_its_options_with_option(gap, tmp_path):
    data, schema = tmp_path / "d.csv", tmp_path / "s.json"
    FRAME.to_csv(data, index=False)
    SCHEMA.to_json(schema)
    runner = CliRunner()
    base = ["fairness", str(data), "-c", "sex ⊥ y | group", "--schema", str(schema), "--exact", "-m", "gap"]
    result = runner.invoke(app, base + ["--option", "scale=2.5", "--option", "positive=1", "--json"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["measures"]["gap"]
    assert entry["value"] == pytest.approx(2.5 * 20 / 100) and entry["options"] == {"positive": 1, "scale": 2.5}
    shown = runner.invoke(app, base + ["--option", "positive=0"], env={"COLUMNS": "160"})
    assert shown.exit_code == 0 and "U_GAP details:" in shown.stdout
    assert "spread: 15, 5" in shown.stdout  # y = 0: block a F 10 vs M 25, block b F 10 vs M 15
    for bad, message in ((["--option", "scale=big"], "option scale takes a number, got 'big'"),
                         (["--option", "scale=0"], "scale must be a finite number > 0"),
                         (["--option", "scale"], "--option takes NAME=VALUE")):
        failed = runner.invoke(app, base + bad)
        assert failed.exit_code == 2 and failed.stderr.strip().startswith("dpaudit: error: ")
        assert message in failed.stderr and len(failed.stderr.strip().splitlines()) == 1


def test_the_selfcheck_audits_its_worst_case(gap):
    from dpaudit.selfcheck import selfcheck, worst_case_pairs

    assert "gap" in worst_case_pairs()
    report = selfcheck(draws=2000, seed=1)
    real = next(c for c in report.checks if c.name == "gap")
    broken = next(c for c in report.broken if c.name == "gap")
    assert real.release == "U_GAP value (Laplace)" and real.ratio == pytest.approx(1.0)  # the pair is tight
    assert real.passed and real.epsilon_lb <= real.claimed_epsilon and real.note == "n·|ΔU_GAP| = 2 of the bound 2"
    assert broken.required and broken.passed, broken  # half the noise, twice the loss: caught


def test_registration_refuses_what_would_break_the_registry():
    with registered(PositiveGap):
        with pytest.raises(DPAuditError, match="already registered"):
            register(PositiveGap)

    @dataclass(frozen=True)
    class Seeded(PositiveGap):
        seed: int = 0
        name = "seeded"

    with pytest.raises(DPAuditError, match="seed is a keyword of audit"):
        register(Seeded)

    @dataclass(frozen=True)
    class ValueDetails(Details):
        value: float

    @dataclass(frozen=True)
    class Colliding(PositiveGap):
        name = "colliding"
        details_types = (ValueDetails,)

    with pytest.raises(DPAuditError, match="details field value collides"):
        register(Colliding)
    with pytest.raises(DPAuditError, match="no measure 'gap' is registered"):
        unregister("gap")
    assert list(MEASURES) == ["tvd", "tc", "repair"]
