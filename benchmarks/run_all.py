"""Run every benchmark and write docs/benchmarks.md (``page.md`` with its tables) and its log–log scaling figure.

Run from the repository root::

    DPAUDIT_DATA=../shared/datasets python benchmarks/run_all.py            # full sizes (long: 100M rows)
    DPAUDIT_DATA=../shared/datasets python benchmarks/run_all.py --quick    # small sizes, about 2–3 minutes
    python benchmarks/run_all.py --only mia --only scaling                   # rerun sections, keep the rest

Sections (``--only`` takes the name or the number):

1. ``fairness``   dpaudit.audit vs the bare DuckDB group-by (Adult; census Parquet at 10M and 100M rows)
2. ``references`` vs fairlearn, scikit-learn's mutual_info_score and the paper's TVD/TC in plain pandas
3. ``repair``     exact U_R vs RC2 on the paper's tuple-level WCNF (where RC2 finishes)
4. ``mia``        MIA evaluation vs one np.sort of the score matrix
5. ``train``      train_run vs a plain scikit-learn loop
6. ``scaling``    rows 10K … 100M and models 16 … 1,024, plotted log–log
7. ``spark``      Adult and the census audit on Spark (local mode), if pyspark is installed
8. ``startup``    dpaudit --help and a small exact audit as fresh processes vs python -c "import duckdb, pandas"

Every number in the document is a ratio dpaudit / baseline of medians over interleaved repeats in this
one process; the machine's load, CPU count and versions are recorded beside them. Generated data (the
census Parquet files) is cached outside the source tree: ``$XDG_CACHE_HOME/dpaudit-bench`` or
``~/.cache/dpaudit-bench`` (``--data-dir`` overrides). Beside the document it writes
``results/benchmarks/benchmarks.json`` (every repeat's seconds) and ``results/benchmarks/scaling.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
from _suite.config import PRESETS, REPO, SECTIONS, Config, inside_repo
from _suite.figure import scaling_figure
from _suite.render import render_document
from _suite.sections import FAILED, Context, SectionResult, log, run_section
from _suite.timing import loadavg, machine

from dpaudit._io import atomic_write_text

DEFAULT_OUT = REPO / "docs" / "benchmarks.md"


def section_keys(only: Sequence[str] | None) -> list[str]:
    """Section keys in document order from ``--only`` values (names or 1-based numbers, commas allowed).

    Examples
    --------
    >>> section_keys(None) == list(SECTIONS)
    True
    >>> section_keys(["6", "mia,1"])
    ['fairness', 'mia', 'scaling']
    """
    if not only:
        return list(SECTIONS)
    chosen = set()
    for item in only:
        for part in item.split(","):
            part = part.strip().lower()
            if part.isdigit() and 1 <= int(part) <= len(SECTIONS):
                chosen.add(SECTIONS[int(part) - 1])
            elif part in SECTIONS:
                chosen.add(part)
            else:
                raise SystemExit(f"run_all.py: unknown section {part!r}; choose from "
                                 f"{', '.join(f'{i + 1}/{k}' for i, k in enumerate(SECTIONS))}")
    return [k for k in SECTIONS if k in chosen]


def side_paths(out: Path) -> tuple[Path, Path]:
    """The JSON of raw times and the scaling figure that go with a document at ``out``."""
    folder = out.parent / "results" / "benchmarks"
    return folder / "benchmarks.json", folder / "scaling.png"


def load_previous(json_path: Path) -> dict[str, SectionResult]:
    if not json_path.is_file():
        return {}
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
        return {k: SectionResult.from_dict(v) for k, v in data.get("sections", {}).items() if k in SECTIONS}
    except (ValueError, KeyError, TypeError) as exc:
        log(f"ignoring unreadable {json_path}: {exc}")
        return {}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def write_document(results: dict[str, SectionResult], run_info: dict, out: Path) -> str:
    """Render the document (``page.md`` filled in from the results) and the figure, and write them."""
    _, figure_path = side_paths(out)
    figure = scaling_figure(results["scaling"], figure_path) if "scaling" in results else None
    text = render_document(results, run_info, figure_rel=os.path.relpath(figure, out.parent) if figure else None)
    _write(out, text)
    return text


def render_only(out: Path) -> str:
    """Rewrite the document from the JSON beside it, running nothing (every number comes from that JSON)."""
    json_path, _ = side_paths(out)
    if not json_path.is_file():
        raise SystemExit(f"run_all.py: no results at {json_path}; run the benchmarks first")
    data = json.loads(json_path.read_text(encoding="utf-8"))
    results = {k: SectionResult.from_dict(v) for k, v in data["sections"].items() if k in SECTIONS}
    return write_document(results, data["run"], out)


def run(cfg: Config, keys: Sequence[str], out: Path, *, keep_others: bool = True) -> dict[str, SectionResult]:
    """Run the sections, then write the document, its JSON and its figure. Returns every section shown."""
    json_path, figure_path = side_paths(out)
    start_env = machine(REPO)
    t0 = time.perf_counter()
    ctx = Context(cfg)
    fresh = {key: run_section(key, cfg, ctx) for key in keys}
    seconds = time.perf_counter() - t0
    results = {**(load_previous(json_path) if keep_others else {}), **fresh}
    run_info: dict[str, Any] = {"env": start_env, "load_end": loadavg(), "seconds": seconds, "sections": list(keys),
                "mode": cfg.mode}
    _write(json_path, json.dumps({"run": run_info, "sections": {k: r.to_dict() for k, r in results.items()}},
                                 indent=1, ensure_ascii=False) + "\n")
    write_document(results, run_info, out)
    log(f"\nwrote {out}, {json_path}" + (f", {figure_path}" if "scaling" in results else "")
        + f" in {seconds:.0f} s")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Sections: " + ", ".join(f"{i + 1} {k}" for i, k in enumerate(SECTIONS)))
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes and 3 repeats (about 2–3 minutes)")
    size.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)  # the test's configuration
    ap.add_argument("--only", action="append", metavar="SECTION",
                    help="run only this section (name or number; repeatable); the others are kept from the "
                         "previous run's JSON beside --out")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the document to write (default docs/benchmarks.md)")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="cache folder for generated data (default $XDG_CACHE_HOME/dpaudit-bench or "
                         "~/.cache/dpaudit-bench; never inside the source tree)")
    ap.add_argument("--repeat", type=int, default=None, help="timed repeats of every comparison (default: per workload, see _suite/config.py)")
    ap.add_argument("--fresh", action="store_true", help="with --only: drop the other sections instead of keeping them")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the document and figure from the JSON beside --out without running anything")
    args = ap.parse_args(argv)
    if args.render_only:
        render_only(args.out.resolve())
        log(f"rewrote {args.out} from {side_paths(args.out.resolve())[0]}")
        return 0

    cfg = PRESETS["quick" if args.quick else "smoke" if args.smoke else "full"]
    if args.data_dir is not None:
        cfg = cfg.replace(data_dir=args.data_dir.expanduser())
    if inside_repo(cfg.data_dir):
        ap.error(f"--data-dir {cfg.data_dir} is inside the source tree; generated data belongs in a cache folder "
                 "outside it")
    if args.repeat is not None:
        if args.repeat < 1:
            ap.error("--repeat must be at least 1")
        cfg = cfg.with_repeat(args.repeat)
    keys = section_keys(args.only)
    if not os.environ.get("DPAUDIT_DATA"):
        log("DPAUDIT_DATA is not set: Adult is read from the download cache if there, else its rows are skipped")
    results = run(cfg, keys, args.out.resolve(), keep_others=bool(args.only) and not args.fresh)
    failed = [k for k in keys if any(note.startswith(FAILED) for note in results[k].notes)]
    if failed:
        log(f"run_all.py: section(s) failed: {', '.join(failed)} (see above and the document)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
