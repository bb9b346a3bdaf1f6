"""The benchmark suite behind ``benchmarks/run_all.py``: timing, reference implementations, sections, rendering.

Modules:

``timing``      interleaved same-process timing, medians and ratios, the machine's state
``config``      the suite's sizes (``smoke`` for the test, ``quick``, ``full``) and its cache folder
``references``  what users run today, written plainly: the paper's TVD/TC in pandas, sklearn's MI,
                fairlearn's demographic parity difference
``adapters``    the workloads of the other benchmark scripts, called through one small interface
                (thin stand-ins where those scripts expose no importable function yet)
``context``     what every section shares: its title, its result record, the run's context, the log
``sections``    the sections of docs/benchmarks.md, each a list of measured comparisons (2 and 3 in
                ``section_references`` and ``section_repair``)
``render``      the Markdown document, from ``tables`` (numbers and tables), ``prose`` (each section's
                text) and ``summary`` (the summary table beside the targets)
``figure``      section 6's series, their fitted exponents and the log–log scaling figure
"""
