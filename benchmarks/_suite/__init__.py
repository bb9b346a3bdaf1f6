"""The benchmark suite behind ``benchmarks/run_all.py``: timing, reference implementations, sections, rendering.

Modules:

``timing``      interleaved same-process timing, medians and ratios, the machine's state
``config``      the suite's sizes (``smoke`` for the test, ``quick``, ``full``) and its cache folder
``references``  what users run today, written plainly: the paper's TVD/TC in pandas, sklearn's MI,
                fairlearn's demographic parity difference
``adapters``    the workloads of the other benchmark scripts, called through one small interface
                (thin stand-ins where those scripts expose no importable function yet)
``sections``    the six sections of docs/benchmarks.md, each a list of measured comparisons
``render``      the Markdown document and the log–log scaling figure
"""
