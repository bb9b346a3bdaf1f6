"""The benchmark suite behind ``benchmarks/run_all.py`` and the helpers every benchmark script shares.

Importing it puts this tree's ``src/`` and ``benchmarks/`` first on ``sys.path``, so a script measures
the dpaudit next to it whatever ``pip install -e`` points at (``import _suite`` before ``dpaudit``).

Modules:

``timing``      interleaved same-process timing, medians and ratios, the scripts' result dict, peak
                RSS, the machine's state
``config``      the suite's sizes (``smoke`` for the test, ``quick``, ``full``) and its cache folder
``references``  what users run today, written plainly: the paper's TVD/TC in pandas, sklearn's MI,
                fairlearn's demographic parity difference
``adapters``    the workloads of the other benchmark scripts, turned into the suite's rows
``context``     what every section shares: its result record, the run's context, the log
``sections``    the sections of docs/benchmarks.md, each a list of measured comparisons (2 and 3 in
                ``section_references`` and ``section_repair``)
``render``      docs/benchmarks.md: ``benchmarks/page.md`` with its placeholders replaced by tables
``figure``      section 6's series, their fitted exponents and the log–log scaling figure
"""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
SRC = BENCH.parent / "src"

for _path in (str(BENCH), str(SRC)):
    if _path in sys.path:
        sys.path.remove(_path)
    sys.path.insert(0, _path)
