"""``dpaudit mia audit-dp``: train a learner at a claimed (ε, δ) with canaries and audit the claim.

Prints the text report (the verdict line first); ``-o FILE`` also writes it in the format FILE's
suffix names (``.json``, ``.html``, ``.txt``, ``.md``). ``--vulnerability FILE`` (for ``--canaries
vulnerable``) is one number per record of the data, in the data's row order: a ``.npy`` array of
shape (n,), or a CSV with a column ``vulnerability`` (n rows; or any n rows with columns ``row``
and ``vulnerability`` giving each record's score by its row number), e.g. the per-record TPR of an
earlier evaluation on the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dpaudit.cli._app import Saves, fail, user_errors
from dpaudit.cli.mia import mia_app
from dpaudit.mia._defaults import (
    DEFAULT_AUDIT_LEVEL,
    DEFAULT_CANARY_COUNT,
    DEFAULT_CANARY_KIND,
    DEFAULT_DATASET,
    DEFAULT_DP_DELTA,
    DEFAULT_DP_LEARNER,
)

__all__ = ["mia_audit_dp", "read_vulnerability"]


def read_vulnerability(path: Path, n: int) -> Any:
    """The per-record vulnerabilities of ``path`` (module docstring) as a float array of shape (n,)."""
    import numpy as np
    import pandas as pd

    from dpaudit._errors import DataError
    from dpaudit.counting.files import require_file

    require_file(path, what="vulnerability file", hint="pass a .npy array or a CSV with a 'vulnerability' column")
    try:
        if path.suffix.lower() == ".npy":
            v = np.load(path, allow_pickle=False)
        else:
            frame = pd.read_csv(path)
            if "vulnerability" not in frame.columns:
                raise DataError(f"{path}: no 'vulnerability' column (columns: {', '.join(map(str, frame.columns))})")
            if "row" in frame.columns:
                v = np.full(n, -np.inf)
                rows = frame["row"].to_numpy()
                if not np.issubdtype(rows.dtype, np.integer) or rows.min() < 0 or rows.max() >= n or \
                        len(np.unique(rows)) != len(rows):
                    raise DataError(f"{path}: column 'row' must hold distinct row numbers 0..{n - 1}")
                v[rows] = frame["vulnerability"].to_numpy(dtype=np.float64)
                v[np.isinf(v) & (v < 0)] = np.nanmin(frame["vulnerability"].to_numpy(dtype=np.float64)) - 1.0
            else:
                v = frame["vulnerability"].to_numpy(dtype=np.float64)
    except DataError:
        raise
    except Exception as exc:  # numpy/pandas raise many types for a malformed file
        raise DataError(f"{path}: cannot be read as vulnerabilities ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())})") from None
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise DataError(f"{path}: the vulnerabilities must be {n:,} finite numbers, one per record of the data, got "
                        f"shape {v.shape}")
    return v


@mia_app.command("audit-dp")
@user_errors
def mia_audit_dp(
    data: str = typer.Option(DEFAULT_DATASET, "--data", help="A registered dataset with a prediction task, or your "
                             "CSV/Parquet file (with --label and --schema)."),
    label: str | None = typer.Option(None, "--label", help="A data file's label column (two values)."),
    positive: str | None = typer.Option(None, "--positive", help="A data file's positive label."),
    schema_file: Path | None = typer.Option(None, "--schema", help="A schema JSON declaring every feature (Categorical "
                                            "values, Binned with finite edges): the features are scaled to it."),
    learner: str = typer.Option(DEFAULT_DP_LEARNER, "--learner", help="A built-in learner (dp-logreg, dp-sgd, logreg, "
                                "…) or package.module:factory, factory(epsilon, delta) returning a classifier."),
    epsilon: float = typer.Option(..., "--epsilon", help="The claimed ε."),
    delta: float = typer.Option(DEFAULT_DP_DELTA, "--delta", help="The claimed δ."),
    canaries: str = typer.Option(DEFAULT_CANARY_KIND, "--canaries", metavar="mislabelled|ood|orthogonal|vulnerable",
                                 help="The canaries (vulnerable: needs --vulnerability)."),
    m: int = typer.Option(DEFAULT_CANARY_COUNT, "-m", "--canary-count", help="Number of canaries m, each in with "
                          "probability 1/2."),
    models: int = typer.Option(1, "--models", "-M", help="Models M (1: one-run audit; 4 or more pools their canaries "
                               "in the one-run bounds and adds the multi-run bound)."),
    seed: int = typer.Option(0, "--seed", help="Seed of every draw and fit (a re-run is bit-identical)."),
    level: float = typer.Option(DEFAULT_AUDIT_LEVEL, "--level", help="Confidence of the verdict."),
    no_contrast: bool = typer.Option(False, "--no-contrast", help="Skip the non-private counterpart."),
    contrast: str | None = typer.Option(None, "--contrast", metavar="LEARNER", help="The contrast learner (a built-in "
                                        "or package.module:factory) instead of the learner's non-private counterpart."),
    base_rows: int | None = typer.Option(None, "--base-rows", metavar="N", help="Train on N rows of the data "
                                         "(drawn with --seed) instead of all: more room for the canaries."),
    vulnerability: Path | None = typer.Option(None, "--vulnerability", metavar="FILE", help="Per-record "
                                              "vulnerabilities (.npy, or CSV column 'vulnerability'; docs/mia.md)."),
    jobs: int | None = typer.Option(None, "--jobs", "-j", help="Parallel model fits (joblib; default 1)."),
    out: Path | None = typer.Option(None, "--out", "-o", metavar="FILE", help="Also write the report to FILE "
                                    "(.json, .html, .txt, .md by its suffix)."),
) -> None:
    """Audit a DP claim: canaries in with probability 1/2, ε lower bounds (one-run, multi-run), the verdict."""
    from dpaudit.mia.claim.audit import audit_dp, load_data

    if no_contrast and contrast is not None:
        fail("--no-contrast and --contrast LEARNER contradict each other; give one")
    if vulnerability is not None and canaries != "vulnerable":
        fail("--vulnerability chooses the canaries of --canaries vulnerable; add that or drop --vulnerability")
    saves = Saves([out] if out is not None else [])  # a bad output path or suffix costs nothing
    v = None
    if vulnerability is not None:
        td, _ = load_data(data, label=label, positive=positive, schema=schema_file)
        v = read_vulnerability(vulnerability, len(td.frame))
    result = audit_dp(data, label=label, positive=positive, schema=schema_file, epsilon=epsilon, delta=delta,
                      learner=learner, canaries=canaries, m=m, models=models, seed=seed, level=level,
                      contrast=contrast if contrast is not None else not no_contrast, vulnerability=v, base_rows=base_rows, n_jobs=jobs)
    saves.render(result)
    typer.echo(str(result))
    saves.write(of="DP-claim audit")
