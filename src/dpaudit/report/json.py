"""The JSON document of a result (``--json``) and reading one back into the typed results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from dpaudit._document import HINT, expect
from dpaudit._errors import DataError, DPAuditError
from dpaudit._io import load_json, to_jsonable
from dpaudit.results import AuditResult

if TYPE_CHECKING:
    from dpaudit.mia.results import MiaReport

__all__ = ["render_json", "read_json"]

Result = Union[AuditResult, "MiaReport"]


def render_json(result: Any) -> str:
    """One JSON document of a result (anything with ``to_dict()``, or a mapping): UTF-8, indented,
    non-finite numbers as the strings ``"inf"``, ``"-inf"``, ``"nan"``. Anything else, or a value
    inside that JSON cannot hold, raises :class:`~dpaudit.DPAuditError`.

    Examples
    --------
    >>> render_json(None)
    Traceback (most recent call last):
    ...
    dpaudit._errors.DPAuditError: render_json takes a result (an AuditResult, a MiaReport, anything with to_dict()) or a mapping, got NoneType
    """
    takes = "a result (an AuditResult, a MiaReport, anything with to_dict()) or a mapping"
    doc = result.to_dict() if callable(getattr(result, "to_dict", None)) else result
    expect(doc, Mapping, "render_json", takes)
    try:
        return json.dumps(to_jsonable(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError, RecursionError) as exc:
        raise DPAuditError(f"render_json: {exc}") from None


def read_json(source: str | Path) -> Result:
    """The typed result of a saved document: an audit (``dpaudit fairness --json``) or a membership-inference
    evaluation (``dpaudit mia evaluate --json``), recognised by its keys.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Schema, audit
    >>> df = pd.DataFrame({"s": ["F", "M"] * 20, "y": [0, 1, 1, 1] * 10})
    >>> res = audit(df, "s ⊥ y", schema=Schema({"s": Categorical(["F", "M"]), "y": Categorical([0, 1])}), exact=True)
    >>> read_json(render_json(res)).to_dict() == res.to_dict()
    True
    """
    doc = _restore_nonfinite(load_json(source, what="result", hint="save one with --json", error=DataError))
    try:
        if isinstance(doc, dict) and "measures" in doc and "criteria" in doc:
            return AuditResult.from_dict(doc)
        if isinstance(doc, dict) and "results" in doc and "n_models" in doc:
            from dpaudit.mia.results import MiaReport

            return MiaReport.from_dict(doc)
    except DPAuditError:
        raise
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:  # a field no check covers
        raise DataError(f"{UNCHECKED} ({type(exc).__name__}: {exc}); {HINT}") from None
    raise DataError("the JSON document is neither a fairness audit (fields measures and criteria) nor a "
                    f"membership-inference evaluation (fields results and n_models); {HINT}")


#: The start of the message of a document that fails in a way no check of :mod:`dpaudit._document` names.
UNCHECKED = "the JSON document is not a complete dpaudit result"
#: The deepest nesting of a result document (a saved result nests about 8 levels).
MAX_DEPTH = 32


#: Keys whose values are the data's own labels (cell labels of an audit: a category may be the text
#: ``"nan"`` or ``"inf"``; a score set's metadata), read back verbatim: only numbers are restored.
_VERBATIM = frozenset({"admissible", "protected", "outcome", "blocks", "kept", "deleted", "target", "scores"})


def _restore_nonfinite(value: Any, depth: int = 0, convert: bool = True) -> Any:
    """The strings ``"inf"``, ``"-inf"``, ``"nan"`` that :func:`render_json` writes for numbers, as
    floats again — except under the keys of :data:`_VERBATIM`, where they are labels. A document nested
    deeper than :data:`MAX_DEPTH` is refused."""
    if depth > MAX_DEPTH:
        raise DataError(f"the JSON document is nested deeper than {MAX_DEPTH} levels: not a dpaudit result")
    if isinstance(value, dict):
        return {k: _restore_nonfinite(v, depth + 1, convert and k not in _VERBATIM) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_nonfinite(v, depth + 1, convert) for v in value]
    if convert and isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)
    return value
