"""The JSON document of a result (``--json``) and reading one back into the typed results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from dpaudit._errors import DataError
from dpaudit._io import load_json, to_jsonable
from dpaudit.results import AuditResult

if TYPE_CHECKING:
    from dpaudit.mia.results import MiaReport

__all__ = ["render_json", "read_json"]

Result = Union[AuditResult, "MiaReport"]


def render_json(result: Any) -> str:
    """One JSON document of a result (anything with ``to_dict()``, or a mapping): UTF-8, indented,
    non-finite numbers as the strings ``"inf"``, ``"-inf"``, ``"nan"``."""
    doc = result.to_dict() if hasattr(result, "to_dict") else result
    return json.dumps(to_jsonable(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def read_json(source: str | Path) -> Result:
    """The typed result of a saved document: an audit (``dpaudit fairness --json``) or a membership-inference
    evaluation (``dpaudit mia evaluate --json``), recognised by its keys.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpaudit import Categorical, Schema, audit
    >>> df = pd.DataFrame({"s": ["F", "M"] * 20, "y": [0, 1, 1, 1] * 10})
    >>> res = audit(df, "s ⊥ y", schema=Schema({"s": Categorical(["F", "M"]), "y": Categorical([0, 1])}))
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
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"the JSON document is not a complete dpaudit result ({type(exc).__name__}: {exc})") from None
    raise DataError("the JSON document is neither a fairness audit nor a membership-inference evaluation")


#: Keys whose values are the data's own labels (cell labels of an audit: a category may be the text
#: ``"nan"`` or ``"inf"``; a score set's metadata), read back verbatim: only numbers are restored.
_VERBATIM = frozenset({"admissible", "protected", "outcome", "blocks", "kept", "deleted", "target", "scores"})


def _restore_nonfinite(value: Any) -> Any:
    """The strings ``"inf"``, ``"-inf"``, ``"nan"`` that :func:`render_json` writes for numbers, as
    floats again — except under the keys of :data:`_VERBATIM`, where they are labels."""
    if isinstance(value, dict):
        return {k: v if k in _VERBATIM else _restore_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_nonfinite(v) for v in value]
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value
