"""The published JSON Schema of the result documents (docs/schema): generated, current, and as strict
as the readers for what it can say.

Every document the suite writes is validated against it by ``tests/conftest.py``; here: the committed
files equal what :mod:`dpaudit.report.json_schema` generates now, they are valid draft 2020-12 schemas,
and a document the schema refuses is refused by ``read_json`` too, naming the same field.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from dpaudit import AuditResult, Categorical, DataError, Schema, audit
from dpaudit.mia.evaluate import evaluate
from dpaudit.mia.simulate import gaussian_scores
from dpaudit.report.json import read_json, render_json
from dpaudit.report.json_schema import KINDS, VERSION, document_schema, file_name, render_schema, schema_id
from tests.hostile.test_result_files import DELETE
from tests.hostile.test_result_files import mutate as _mutate

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "schema"


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    schema = Schema({"s": Categorical(["F", "M"]), "g": Categorical(["a", "b"]), "y": Categorical([0, 1])})
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"s": rng.choice(["F", "M"], 300), "g": rng.choice(["a", "b"], 300),
                          "y": rng.integers(0, 2, 300)})
    kw = {"schema": schema, "measures": ["tvd", "tc", "repair"]}
    exact = audit(frame, ["s ⊥ y", "s ⊥ y | g"], exact=True, **kw)
    dp = audit(frame, ["s ⊥ y", "s ⊥ y | g"], epsilon=1.0, **kw)
    mia = evaluate(gaussian_scores(16, 200, seed=1).to_scoreset(), fpr=(0.1, 0.01), n_boot=20, seed=1,
                   by=["a", "b"] * 100)
    return {name: json.loads(render_json(r)) for name, r in (("exact", exact), ("dp", dp), ("mia", mia))}


def _validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((FOLDER / file_name(kind)).read_text("utf-8")))


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_committed_schema_is_what_the_result_types_generate(kind):
    """Regenerate with ``python -m dpaudit.report.json_schema docs/schema`` after changing a result type
    (and raise ``VERSION`` when the change refuses documents the old schema accepted)."""
    assert (FOLDER / file_name(kind)).read_text("utf-8") == render_schema(kind)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_schema_is_a_versioned_draft_2020_12_schema(kind):
    schema = document_schema(kind)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == schema_id(kind) == f"urn:dpaudit:schema:dpaudit-{kind}-{VERSION}"
    assert file_name(kind) == f"dpaudit-{kind}-{VERSION}.json"
    assert sorted(p.name for p in FOLDER.glob("*.json")) == sorted(file_name(k) for k in KINDS)


@pytest.mark.parametrize("name, kind", [("exact", "audit"), ("dp", "audit"), ("mia", "mia")])
def test_a_saved_document_is_valid(docs, name, kind):
    _validator(kind).validate(docs[name])
    assert list(_validator("mia" if kind == "audit" else "audit").iter_errors(docs[name]))


# name: (document, path, value, the field both the schema and read_json name)
REFUSED = {
    "n negative": ("exact", ("n",), -1, "n"),
    "n a float": ("exact", ("n",), 1.5, "n"),
    "no criteria": ("exact", ("criteria",), [], "criteria"),
    "no measures": ("exact", ("measures",), {}, "measures"),
    "mode unknown": ("exact", ("mode",), "bogus", "mode"),
    "schema unknown": ("exact", ("schema",), "guessed", "schema"),
    "value a string": ("exact", ("measures", "tvd", "value"), "0.1", "measures.tvd.value"),
    "scale negative": ("dp", ("measures", "tvd", "scale"), -1.0, "measures.tvd.scale"),
    "interval of one": ("exact", ("measures", "tvd", "interval"), [0.0], "measures.tvd.interval"),
    "dp not a flag": ("exact", ("measures", "tvd", "dp"), "no", "measures.tvd.dp"),
    "epsilon zero": ("dp", ("measures", "tvd", "epsilon"), 0, "measures.tvd.epsilon"),
    "title missing": ("exact", ("measures", "tc", "title"), DELETE, "measures.tc.title"),
    "sign unknown": ("exact", ("measures", "tc", "top_cells", 0, "sign"), "sideways", "measures.tc.top_cells[0].sign"),
    "count negative": ("exact", ("measures", "tc", "top_cells", 0, "count"), -3, "measures.tc.top_cells[0].count"),
    "label a list": ("exact", ("measures", "tc", "top_cells", 0, "protected", "s"), ["F"],
                     "measures.tc.top_cells[0].protected.s"),
    "rank zero": ("dp", ("measures", "tc", "top_cells", 0, "rank"), 0, "measures.tc.top_cells[0].rank"),
    "selection epsilon missing": ("dp", ("measures", "tc", "top_cells_release", "epsilon"), DELETE,
                                  "measures.tc.top_cells_release.epsilon"),
    "semantics unknown": ("exact", ("measures", "repair", "semantics"), "fuzzy", "measures.repair.semantics"),
    "block status unknown": ("exact", ("measures", "repair", "per_block", 0, "status"), "done",
                             "measures.repair.per_block[0].status"),
    "baseline not numbers": ("exact", ("measures", "tvd", "baseline", 0, "mi_bits"), None,
                             "measures.tvd.baseline[0].mi_bits"),
    "n_models zero": ("mia", ("n_models",), 0, "n_models"),
    "group tpr above 1": ("mia", ("disparity", "rows", 0, "groups", 0, "tpr"), 1.5, "disparity.rows[0].groups[0].tpr"),
    "group rule unknown": ("mia", ("disparity", "rows", 0, "rule"), "naive", "disparity.rows[0].rule"),
    "no groups": ("mia", ("disparity", "rows", 0, "groups"), [], "disparity.rows[0].groups"),
    "gap p missing": ("mia", ("disparity", "rows", 1, "gap", "p_value"), DELETE, "disparity.rows[1].gap.p_value"),
    "alpha of 1": ("mia", ("alphas", 0), 1, "alphas[0]"),
    "tpr above 1": ("mia", ("results", 0, "pp_t", "tpr"), 1.5, "results[0].pp_t.tpr"),
    "unknown rule": ("mia", ("results", 0, "best"), {"estimable": False, "reason": "x"}, "results[0].best"),
    "estimable with a null tpr": ("mia", ("results", 0, "naive", "tpr"), None, "results[0].naive.tpr"),
    "not estimable with a tpr": ("mia", ("results", 0, "pp_rank", "tpr"), 0.5, "results[0].pp_rank.tpr"),
    "not estimable without reason": ("mia", ("results", 0, "pp_rank", "reason"), DELETE, "results[0].pp_rank.reason"),
    "fpr kind unknown": ("mia", ("results", 0, "naive", "fpr_kind"), "guessed", "results[0].naive.fpr_kind"),
    "spread above 1": ("mia", ("results", 0, "naive_per_record_fpr", "max"), 2.0, "results[0].naive_per_record_fpr.max"),
    "verdict kind unknown": ("mia", ("results", 0, "verdict", "kind"), "maybe", "results[0].verdict.kind"),
    "level missing": ("mia", ("options", "level"), DELETE, "options.level"),
    "threshold unknown": ("mia", ("options", "threshold"), "median", "options.threshold"),
    "share_non_normal above 1": ("mia", ("diagnostics", "share_non_normal"), 3, "diagnostics.share_non_normal"),
    "curve of an unknown rule": ("mia", ("curves", "best"), {"fpr": [1.0], "tpr": [1.0]}, "curves.best"),
    "histogram count negative": ("mia", ("fpr_histograms", 0, "counts", 0), -1, "fpr_histograms[0].counts[0]"),
    "vulnerable record negative": ("mia", ("results", 0, "vulnerable", "record", 0), -1,
                                   "results[0].vulnerable.record[0]"),
}


def _schema_path(error: jsonschema.ValidationError) -> str:
    """The dotted field path of a schema error (``results[0].pp_t.tpr``), as the readers print it."""
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_document_the_schema_refuses_is_refused_by_read_json_too(docs, case):
    name, path, value, field = REFUSED[case]
    damaged = _mutate(docs[name], path, value)
    errors = list(_validator("mia" if name == "mia" else "audit").iter_errors(damaged))
    assert errors, f"the schema accepts {case}"
    paths = {_schema_path(e) for e in errors} | {_schema_path(c) for e in errors for c in e.context or ()}
    parent = field.rsplit(".", 1)[0] if "." in field else ""
    assert any(p == field or (p and field.startswith(p)) or p == parent for p in paths), (paths, field)
    with pytest.raises(DataError, match="field " + field.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        read_json(json.dumps(damaged))


def test_what_the_schema_cannot_say_is_left_to_read_json(docs):
    """Rules between fields are the readers' alone: an interval that does not hold its value is valid
    by the schema and refused by ``read_json``."""
    damaged = _mutate(docs["exact"], ("measures", "tvd", "interval"), [5.0, 6.0])
    assert not list(_validator("audit").iter_errors(damaged))
    with pytest.raises(DataError, match="field measures.tvd.interval"):
        read_json(json.dumps(damaged))


def test_non_finite_numbers_are_the_strings_json_holds(docs):
    doc = _mutate(docs["exact"], ("measures", "repair", "upper"), "inf")
    _validator("audit").validate(doc)
    assert list(_validator("audit").iter_errors(_mutate(doc, ("measures", "repair", "upper"), "nan")))
    assert read_json(json.dumps(doc)).measures["repair"].details.upper == float("inf")
    # the parsed document reads the same way: from_dict(json.loads(text)), as README says
    assert AuditResult.from_dict(doc).measures["repair"].details.upper == float("inf")
    with pytest.raises(DataError, match="upper"):
        AuditResult.from_dict(_mutate(doc, ("measures", "repair", "upper"), "infinite"))


def test_read_json_refuses_text_that_is_no_document_in_one_line():
    for text in ("x" * 5000, json.dumps([{"measures": {}}])):
        with pytest.raises(DataError):
            read_json(text)


def test_the_generator_command_writes_the_committed_files(tmp_path, capsys):
    from dpaudit.report.json_schema import main

    main([str(tmp_path / "out")])
    for kind in KINDS:
        assert (tmp_path / "out" / file_name(kind)).read_text(encoding="utf-8") == render_schema(kind)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert not (Path.cwd() / "--help").exists()
