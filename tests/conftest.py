"""Shared fixtures."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def adult_available():
    """Skip (locally, with the reason) when the real Adult files are absent; never skip in CI."""
    root = os.environ.get("DPAUDIT_DATA")
    if root and (Path(root) / "adult" / "adult.data.gz").is_file():
        return Path(root).resolve()  # tests may change the working folder
    if os.environ.get("CI"):
        pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder (adult/ missing)")
    pytest.skip("real Adult files not found: set DPAUDIT_DATA to the shared datasets folder")


@pytest.fixture(scope="module")
def data_root():
    """The shared datasets folder (``DPAUDIT_DATA``); skip locally when unset, never in CI."""
    root = os.environ.get("DPAUDIT_DATA")
    if not root:
        if os.environ.get("CI"):
            pytest.fail("CI must run with DPAUDIT_DATA pointing at the shared datasets folder")
        pytest.skip("DPAUDIT_DATA is not set: point it at the shared datasets folder to test the real files")
    return Path(root).resolve()  # tests may change the working folder


def _flip_table(n_per_group: int, t: float) -> np.ndarray:
    """Spec §5: balanced 2×2 table, a fraction t of (male, 0) flipped to 1 and of (female, 1) to 0."""
    half = n_per_group // 2
    moved = round(t * half)
    return np.array([[half + moved, half - moved], [half - moved, half + moved]])


@pytest.fixture
def flip_table():
    """The flip-test table builder ``flip_table(n_per_group, t)``."""
    return _flip_table


class _FakeResponse:
    """What ``urllib.request.urlopen`` returns, serving fixed bytes (for offline download tests)."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self) -> bytes:
        return self.body

    def __enter__(self) -> "_FakeResponse":
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


@pytest.fixture
def fake_response():
    """The response class a fake ``urlopen`` returns: ``fake_response(body_bytes)``."""
    return _FakeResponse


# -- every result document the suite writes is valid by the published JSON Schema (docs/schema) -------

_SCHEMA_DIR = Path(__file__).resolve().parents[1] / "docs" / "schema"
_WRITTEN: list[tuple[str, str]] = []  # (how, text) of the documents written since the last test ended
_VALIDATED: dict[str, int] = {}  # kind -> documents validated in the session


def _document_kind(doc: object) -> str | None:
    """The kind of a result document, recognised as :func:`dpaudit.report.json.read_json` does."""
    if isinstance(doc, dict) and "measures" in doc and "criteria" in doc:
        return "audit"
    if isinstance(doc, dict) and "results" in doc and "n_models" in doc:
        return "mia"
    return None


def _validators() -> dict:
    import json

    import jsonschema

    from dpaudit.report.json_schema import KINDS, file_name

    return {kind: jsonschema.Draft202012Validator(json.loads((_SCHEMA_DIR / file_name(kind)).read_text("utf-8")))
            for kind in KINDS}


def pytest_configure(config: pytest.Config) -> None:
    """Wrap the writers of result documents (``render_json``, behind ``--json`` and ``--save x.json``,
    and ``AuditResult.to_json``) so that each test's documents are validated when it ends."""
    import functools

    import dpaudit.report.json as report_json
    from dpaudit.results import AuditResult

    original, to_json = report_json.render_json, AuditResult.to_json

    @functools.wraps(original)
    def render_json(result, *args, **kwargs):
        text = original(result, *args, **kwargs)
        _WRITTEN.append(("render_json", text))
        return text

    @functools.wraps(to_json)
    def audit_to_json(self, **kwargs):
        text = to_json(self, **kwargs)
        _WRITTEN.append(("AuditResult.to_json", text))
        return text

    report_json.render_json = render_json
    AuditResult.to_json = audit_to_json
    for module in list(sys.modules.values()):  # modules that imported the function before
        if getattr(module, "render_json", None) is original and module is not report_json:
            module.render_json = render_json


@pytest.fixture(autouse=True)
def _written_documents_follow_the_schema(request):
    """After each test: every result document it wrote (see :func:`pytest_configure`) is valid by its
    kind's JSON Schema; a test that writes deliberately inconsistent results by hand opts out with
    ``@pytest.mark.schema_exempt``."""
    import json

    yield  # documents written since the last test ended: this test's and its fixtures' (any scope)
    written, exempt = list(_WRITTEN), request.node.get_closest_marker("schema_exempt") is not None
    _WRITTEN.clear()
    if exempt or not written:
        return
    validators = _VALIDATORS.setdefault("v", _validators())
    for how, text in written:
        try:
            doc = json.loads(text)
        except ValueError:
            continue  # to_json(allow_nan=...) of a result with non-finite numbers: not a document
        kind = _document_kind(doc)
        if kind is None:
            continue
        errors = sorted(validators[kind].iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(map(str, errors[0].absolute_path)) or "(root)"
            pytest.fail(f"{how} wrote a {kind} document the schema refuses at {where}: {errors[0].message[:200]} … {errors[0].message[-300:]} (schema path {'/'.join(map(str, errors[0].absolute_schema_path))})",
                        pytrace=False)
        _VALIDATED[kind] = _VALIDATED.get(kind, 0) + 1


_VALIDATORS: dict = {}


def pytest_terminal_summary(terminalreporter) -> None:
    if _VALIDATED:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(_VALIDATED.items()))
        terminalreporter.write_line(f"result documents validated against docs/schema: {sum(_VALIDATED.values())} "
                                    f"({counts})")
