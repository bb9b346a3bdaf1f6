"""Hostile saved results: ``read_json`` (and every ``from_dict`` behind it) and the renderers.

The documents are real ones saved in the test (an exact and a DP audit with tvd, tc and repair; an MIA
evaluation of a small simulation), then damaged by hand (a table of cases, each naming the field the
message must name) and at random (hypothesis). Every damaged document is either read into a result
that renders, or refused with a DataError that names the field and says to save the result again —
never another exception. Through the command line a refused document ends in one line, exit 2, and
nothing written.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit import Categorical, DataError, DPAuditError, Schema, audit
from dpaudit._document import HINT
from dpaudit.details import UnknownDetails
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.results import MiaReport
from dpaudit.mia.simulate import gaussian_scores
from dpaudit.report import html, html_mia, text
from dpaudit.report.json import UNCHECKED, read_json, render_json
from dpaudit.results import AuditResult
from tests.hostile.conftest import assert_one_line_error, files_in

SCHEMA = Schema({"s": Categorical(["F", "M"]), "g": Categorical(["a", "b"]), "y": Categorical([0, 1])})
CRITERIA = ["s ⊥ y", "s ⊥ y | g"]
DELETE = object()  # a mutation that removes the key


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"s": rng.choice(["F", "M"], 300), "g": rng.choice(["a", "b"], 300),
                         "y": rng.integers(0, 2, 300)})


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    """Real saved documents, as ``json.loads`` of what ``--json`` writes."""
    measures = ["tvd", "tc", "repair"]
    exact = audit(_frame(), CRITERIA, schema=SCHEMA, measures=measures, exact=True)
    dp = audit(_frame(), CRITERIA, schema=SCHEMA, measures=measures, epsilon=1.0)
    mia = evaluate(gaussian_scores(16, 200, seed=1).to_scoreset(), fpr=(0.1, 0.01), n_boot=20, seed=1)
    return {name: json.loads(render_json(r)) for name, r in (("exact", exact), ("dp", dp), ("mia", mia))}


def mutate(doc: dict, path: tuple, value: object) -> dict:
    """A deep copy of ``doc`` with the field at ``path`` (keys and list indices) replaced or deleted."""
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def _renders(result: AuditResult | MiaReport) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # matplotlib on extreme but valid numbers
        page = (html.render_audit if isinstance(result, AuditResult) else html_mia.render_mia)(result)
    return str(result) + page


# -- the valid documents are read back whole -----------------------------------------------------------

@pytest.mark.parametrize("name", ["exact", "dp", "mia"])
def test_a_saved_document_reads_back_and_renders(docs, name):
    back = read_json(json.dumps(docs[name]))
    assert json.loads(render_json(back)) == docs[name]
    assert _renders(back)


def test_an_unregistered_measure_keeps_its_details_as_a_field_table(docs):
    doc = copy.deepcopy(docs["exact"])
    doc["measures"]["gap"] = {**{k: doc["measures"]["tvd"][k] for k in ("value", "epsilon", "sensitivity", "scale",
                                                                       "interval", "dp", "mechanism", "reasons",
                                                                       "per_criterion")},
                              "title": "U_GAP", "spread": [[20], [15, 5]]}
    back = read_json(json.dumps(doc))
    assert back["gap"].details == UnknownDetails({"spread": [[20], [15, 5]]})
    assert "spread: 20; 15, 5" in _renders(back)


# -- damaged by hand: (document, path, new value, what the message says) ---------------------------------

CASES = {
    # audits: types and ranges
    "n negative": ("exact", ("n",), -5, "field n must be an integer >= 0 and <= 9.0072e+15, got -5"),
    "n text": ("dp", ("n",), "300", "field n must be an integer >= 0 and <= 9.0072e+15, got '300'"),
    "n boolean": ("dp", ("n",), True, "field n must be an integer >= 0 and <= 9.0072e+15, got True"),
    "mode unknown": ("exact", ("mode",), "bogus", "field mode must be one of exact, dp, got 'bogus'"),
    "dp not a flag": ("exact", ("dp",), "x", "field dp must be True or False, got 'x'"),
    "measures a list": ("exact", ("measures",), [1], "field measures must be a JSON object, got [1]"),
    "measures empty": ("dp", ("measures",), {}, "field measures is empty"),
    "measure not an object": ("dp", ("measures", "tvd"), 5, "field measures.tvd must be a JSON object, got 5"),
    "criteria empty": ("exact", ("criteria",), [], "field criteria is empty"),
    "criteria not parsed": ("exact", ("criteria", 0), "no criterion", "field criteria[0] is not a criterion"),
    "schema unknown": ("dp", ("schema",), "guessed", "field schema must be one of declared, data-derived"),
    "stages text": ("dp", ("stages",), "x", "field stages must be a list, got 'x'"),
    "source number": ("dp", ("source",), 5, "field source must be a string, got 5"),
    "budget negative": ("dp", ("budget",), {"total_epsilon": -1, "spent": 0, "remaining": 1},
                        "field budget.total_epsilon must be a finite number > 0, got -1"),
    "title missing": ("exact", ("measures", "tc", "title"), DELETE, "field measures.tc.title is missing"),
    "interval one number": ("dp", ("measures", "tvd", "interval"), [1],
                            "field measures.tvd.interval must be a list of 2 items, got [1]"),
    "interval reversed": ("dp", ("measures", "tvd", "interval"), [2, 1], "field measures.tvd.interval must be an "
                                                                         "interval, low <= high"),
    "interval of text": ("dp", ("measures", "tc", "interval", 0), "a",
                         "field measures.tc.interval[0] must be a finite number, got 'a'"),
    "interval misses the value": ("dp", ("measures", "tvd", "interval"), [100.0, 101.0],
                                  "field measures.tvd.interval [100.0, 101.0] does not hold the value"),
    "sensitivity negative": ("exact", ("measures", "tvd", "sensitivity"), -1.0,
                             "field measures.tvd.sensitivity must be a finite number >= 0"),
    "value infinite": ("dp", ("measures", "repair", "value"), "inf", "field measures.repair.value must be a finite"),
    "reasons of numbers": ("exact", ("measures", "tvd", "reasons"), [1], "field measures.tvd.reasons[0] must be a "
                                                                         "string, got 1"),
    "per_criterion short": ("exact", ("measures", "tc", "per_criterion"), [0.1],
                            "field measures.tc.per_criterion must hold one value per criterion (2)"),
    # audits: parts that contradict each other (an exact result cannot claim DP)
    "exact claims dp": ("exact", ("dp",), True, "field dp is True but the measures' releases say False"),
    "exact release claims dp": ("exact", ("measures", "tvd", "dp"), True,
                                "field measures.tvd.dp is true but the value carries no noise"),
    "exact with dp mode": ("exact", ("mode",), "dp", "field mode is 'dp' but epsilon is None"),
    "dp without epsilon": ("dp", ("epsilon",), None, "field mode is 'dp' but epsilon is None"),
    "epsilon not spent": ("dp", ("epsilon",), 5.0, "field epsilon is 5 but the measures' releases spent 1"),
    "exact release with noise": ("exact", ("measures", "tvd", "scale"), 0.5,
                                 "field measures.tvd.scale is 0.5 but epsilon is null"),
    "not dp without a reason": ("exact", ("measures", "repair", "reasons"), [],
                                "field measures.repair.reasons is empty but dp is false"),
    "dp with exact values": ("dp", ("measures", "tvd", "per_criterion"), [0.1, 0.2],
                             "field measures.tvd.per_criterion must hold one value per criterion (2) in an exact "
                             "result, and be absent in a DP one"),
    "dp with exact details": ("dp", ("measures", "tvd", "baseline"), [{"mi_nats": 0.1, "mi_bits": 0.1}] * 2,
                              "field measures.tvd.baseline holds exact-mode details in a dp result"),
    "dp on guessed domains": ("dp", ("schema",), "data-derived (not DP)",
                              "field dp is true but the domains were read off the data"),
    # audits: details
    "baseline short": ("exact", ("measures", "tvd", "baseline"), [{"mi_nats": 0.1, "mi_bits": 0.1}],
                       "field measures.tvd.baseline must hold one entry per criterion (2)"),
    "baseline text": ("exact", ("measures", "tvd", "baseline", 0, "mi_bits"), "x",
                      "field measures.tvd.baseline[0].mi_bits must be a finite number, got 'x'"),
    "top cell count negative": ("exact", ("measures", "tc", "top_cells", 0, "count"), -3,
                                "field measures.tc.top_cells[0].count must be an integer >= 0"),
    "top cell labels a list": ("exact", ("measures", "tc", "top_cells", 0, "protected"), [1],
                               "field measures.tc.top_cells[0].protected must be a JSON object, got [1]"),
    "top cell label nested": ("exact", ("measures", "tc", "top_cells", 0, "outcome", "y"), [0],
                              "field measures.tc.top_cells[0].outcome.y must be a value of the data"),
    "top cell sign": ("exact", ("measures", "tc", "top_cells", 0, "sign"), "sideways",
                      "field measures.tc.top_cells[0].sign must be one of over, under, none"),
    "md map of another shape": ("exact", ("measures", "tc", "cell_md", 0, "md"), [[[1.0]]],
                                "field measures.tc.cell_md[0].md[0] must be a list of 2 items"),
    "md map without blocks": ("exact", ("measures", "tc", "cell_md", 0, "blocks"), [],
                              "field measures.tc.cell_md[0].md must be one 2 × 2 table of MD values per block (0)"),
    "named cell rank 0": ("dp", ("measures", "tc", "top_cells", 0, "rank"), 0,
                          "field measures.tc.top_cells[0].rank must be an integer >= 1"),
    "selection without epsilon": ("dp", ("measures", "tc", "top_cells_release", "epsilon"), 0,
                                  "field measures.tc.top_cells_release.epsilon must be a finite number > 0, got 0"),
    "per_block text": ("exact", ("measures", "repair", "per_block"), "x",
                       "field measures.repair.per_block must be a list, got 'x'"),
    "block upper text": ("exact", ("measures", "repair", "per_block", 0, "upper"), "x",
                         "field measures.repair.per_block[0].upper must be a finite number (or inf), got 'x'"),
    "block status unknown": ("exact", ("measures", "repair", "per_block", 0, "status"), "done",
                             "field measures.repair.per_block[0].status must be one of exact, bounds, work limit, timed out"),
    "change count text": ("exact", ("measures", "repair", "per_block", 0, "changes", 0, "count"), "65",
                          "field measures.repair.per_block[0].changes[0].count must be an integer >= 0"),
    "semantics unknown": ("exact", ("measures", "repair", "semantics"), "multiset",
                          "field measures.repair.semantics must be one of ci, bag, set"),
    # MIA evaluations
    "curves text": ("mia", ("curves",), "x", "field curves must be a JSON object, got 'x'"),
    "curve of another rule": ("mia", ("curves", "best"), {"fpr": [0.5], "tpr": [0.5]},
                              "field curves.best is not a rule"),
    "curve lengths differ": ("mia", ("curves", "naive", "tpr"), [0.5], "field curves.naive.tpr must hold one value "
                                                                        "per FPR"),
    "tpr of 5": ("mia", ("results", 0, "pp_t", "tpr"), 5, "field results[0].pp_t.tpr must be a finite number >= 0 and "
                                                          "<= 1, got 5"),
    "alpha of 2": ("mia", ("alphas", 0), 2, "field alphas[0] must be a number strictly between 0 and 1, got 2"),
    "no alphas": ("mia", ("alphas",), [], "field results must hold one entry per α of alphas"),
    "alpha not the listed one": ("mia", ("results", 1, "alpha"), 0.5, "field results[1].alpha is not the α of alphas"),
    "unknown rule": ("mia", ("results", 0, "best"), {"estimable": False, "reason": "x"}, "field results[0].best is not "
                                                                                         "a rule"),
    "ci one number": ("mia", ("results", 0, "pp_t", "ci"), [0.5], "field results[0].pp_t.ci must be a list of 2 items"),
    "estimable without tpr": ("mia", ("results", 0, "naive", "tpr"), DELETE, "field results[0].naive.tpr is missing"),
    "estimable with a null tpr": ("mia", ("results", 0, "naive", "tpr"), None,
                                  "field results[0].naive.tpr must be a finite number >= 0 and <= 1, got None"),
    "not estimable without reason": ("mia", ("results", 0, "pp_rank", "reason"), DELETE,
                                     "field results[0].pp_rank.reason is missing"),
    "not estimable with a tpr": ("mia", ("results", 0, "pp_rank", "tpr"), 0.5,
                                 "field results[0].pp_rank.tpr and fpr must be null"),
    "spread above 1": ("mia", ("results", 0, "naive_per_record_fpr", "max"), 2.0,
                       "field results[0].naive_per_record_fpr.max must be a finite number >= 0 and <= 1"),
    "no models": ("mia", ("n_models",), 0, "field n_models must be an integer >= 1"),
    "level text": ("mia", ("options", "level"), "x", "field options.level must be a number strictly between 0 and 1"),
    "attack_options a list": ("mia", ("options", "attack_options"), [1], "field options.attack_options must be a JSON "
                                                                         "object, got [1]"),
    "attack null": ("mia", ("options", "attack"), None, "field options.attack must be a string, got None"),
    "options missing": ("mia", ("options",), DELETE, "field options is missing"),
    "diagnostics text": ("mia", ("diagnostics", "share_non_normal"), "x",
                         "field diagnostics.share_non_normal must be a finite number >= 0 and <= 1"),
    "histogram count huge": ("mia", ("fpr_histograms", 0, "counts", 0), 10**30,
                             "field fpr_histograms[0].counts[0] must be an integer >= 0 and <= 9.0072e+15"),
    "histogram counts short": ("mia", ("fpr_histograms", 0, "counts"), [1],
                               "field fpr_histograms[0].counts must be a list of 4 items, got [1]"),
    "histogram edges decrease": ("mia", ("fpr_histograms", 0, "edges"), [0.5, 0.25],
                                 "field fpr_histograms[0].edges must be two or more increasing numbers"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_damaged_document_is_refused_naming_the_field(docs, name):
    which, path, value, fragment = CASES[name]
    with pytest.raises(DataError) as refused:
        read_json(json.dumps(mutate(docs[which], path, value)))
    message = str(refused.value)
    assert fragment in message and message.endswith(HINT) and "\n" not in message, message


def test_documents_that_are_no_result_are_refused(tmp_path):
    nested: list = []
    deep = nested
    for _ in range(40):
        deep.append([])
        deep = deep[0]
    for text_, fragment in [("[1]", "neither a fairness audit"), ('{"n": 1}', "neither a fairness audit"),
                            (json.dumps({"criteria": ["a ⊥ b"], "measures": nested}), "nested deeper than 32"),
                            ('{"n": ' + "9" * 5000 + "}", "not valid JSON")]:
        (tmp_path / "r.json").write_text(text_)
        with pytest.raises(DataError, match=fragment):
            read_json(tmp_path / "r.json")


# -- damaged at random -------------------------------------------------------------------------------

def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every field of a document (the first two items of each list)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value[:2]):
            out += _paths(item, prefix + (i,))
    return out


MUTATIONS = st.sampled_from([None, "x", [], {}, [1, "x"], -1, -0.5, 1e308, 10**30, True, 0, DELETE])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mutations=st.lists(MUTATIONS, min_size=1, max_size=2))
def test_random_damage_is_read_and_rendered_or_refused_as_data_error(docs, data, mutations):
    which = ("exact", "dp", "mia")[data.draw(st.integers(0, 2))]
    doc = docs[which]
    for value in mutations:  # a path picked by an integer draw: the same draws whatever the document's shape
        paths = _paths(doc)
        doc = mutate(doc, paths[data.draw(st.integers(0, 2**20)) % len(paths)], value)
    try:
        result = read_json(json.dumps(doc))
    except DataError as exc:  # refused by a check that names the field, not by the reader's last resort
        assert not str(exc).startswith(UNCHECKED) and str(exc).endswith(HINT), str(exc)
        return
    assert _renders(result)


# -- the renderers take one type each -----------------------------------------------------------------

def test_renderers_refuse_a_wrong_argument_type(docs):
    audit_result, report = read_json(json.dumps(docs["dp"])), read_json(json.dumps(docs["mia"]))
    for render in (html.render_audit, html.render_audit_fragment, text.render_audit):
        for wrong in (None, docs["dp"], report):
            with pytest.raises(DPAuditError, match=f"^{render.__name__} takes an AuditResult, got "):
                render(wrong)
    for render in (html_mia.render_mia, html_mia.render_mia_fragment, text.render_mia):
        for wrong in (None, docs["mia"], audit_result):
            with pytest.raises(DPAuditError, match=f"^{render.__name__} takes a MiaReport, got "):
                render(wrong)
    for wrong in (None, 5, "text", [1]):
        with pytest.raises(DPAuditError, match="^render_json takes a result"):
            render_json(wrong)
    with pytest.raises(DPAuditError, match="^render_json: cannot write"):
        render_json({"a": object()})


def test_a_result_whose_parts_contradict_each_other_is_a_data_error(docs):
    """A result built by hand, not read: the renderer itself refuses it in one DataError."""
    exact = read_json(json.dumps(docs["exact"]))
    broken = replace(exact, measures={**exact.measures, "tc": replace(exact["tc"], per_criterion=(0.1,))})
    with pytest.raises(DataError, match="render_audit: the result's parts do not fit together"):
        html.render_audit(broken)


# -- through the command line ---------------------------------------------------------------------------

CLI_CASES = ["measures a list", "per_block text", "curves text", "interval one number", "n negative",
             "exact claims dp", "tpr of 5", "alpha of 2"]


@pytest.mark.parametrize("name", CLI_CASES)
def test_report_of_a_damaged_document_is_one_line_and_writes_nothing(cli, workdir, docs, name):
    which, path, value, fragment = CASES[name]
    (workdir / "r.json").write_text(json.dumps(mutate(docs[which], path, value)))
    line = assert_one_line_error(cli("report", "r.json", "--html", "out.html"), fragment=fragment)
    assert line.endswith(HINT)
    assert files_in(workdir) == ["r.json"]


@pytest.mark.parametrize("special", ["/dev/null", "fifo", "folder"])
def test_report_of_a_special_file_names_what_it_is(cli, workdir, special):
    if special == "fifo":
        os.mkfifo(workdir / "fifo")
    elif special == "folder":
        (workdir / "folder").mkdir()
    kind = {"/dev/null": "is a character device", "fifo": "is a named pipe (FIFO)", "folder": "is a directory"}
    before = files_in(workdir)
    assert_one_line_error(cli("report", special, "--html", "out.html"), fragment=kind[special])
    assert files_in(workdir) == before
