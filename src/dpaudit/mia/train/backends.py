"""Where :func:`~dpaudit.mia.train.train_run` fits its models: on this machine or on a Dask cluster.

Backends (:data:`BACKENDS`)
---------------------------
``"local"``
    joblib's process pool on this machine with ``n_jobs`` workers (default 1). If the caller has
    activated another joblib backend with ``joblib.parallel_config``, that backend is used.
``"dask"``
    A Dask cluster, through joblib's Dask backend. ``scheduler="tcp://host:8786"`` connects to a
    running scheduler (``dask scheduler``, with ``dask worker tcp://host:8786`` on each machine).
    Without a scheduler, a ``distributed.LocalCluster`` is started on this machine with ``n_jobs``
    single-threaded worker processes (default: one per core). It is closed when the run ends.

Only the model fits run remotely. The driver draws the pool and the design, receives every model's
scores, and writes the run directory itself (atomic writes, resumable), just as a local run does.
The backend is not recorded in ``run.json``, so a run started on one backend can be resumed on the
other.

What travels over the network
-----------------------------
The function that runs on the workers (``dpaudit.mia.train.trainer._train_models``) is pickled by
reference. A built-in model is sent by name and a user model as its ``package.module:factory``
string. So every worker needs dpaudit and the model's module installed, with the same versions as
the driver. Before anything is written, :func:`check_workers` asks every worker to import the
model and report its versions, and refuses a worker that differs. Every task checks the versions
again, which catches workers that join later.

The data goes once per worker, not once per task. joblib's Dask backend scatters any argument
larger than 1 kB once per call: the pool's feature frame (N+ rows) and the labels go to one worker,
and the other workers fetch them from it or from each other. A task itself carries only its model
indices, its own rows of the keep matrix, the model name, the seed and the trainer. Each result is
8·N+ bytes of scores per model. Inside a task, scikit-learn's own joblib calls run in sequence
(``_train_models``). Otherwise the ColumnTransformer of every per-model fit would send its rows back
to the cluster as two nested Dask tasks per model.

:func:`dask_runner` submits all tasks at once (``pre_dispatch="all"``). A free worker then always
finds queued work, instead of waiting for the driver to receive a result and send the next task, as
with joblib's default window of 2·n_jobs tasks in flight. While tasks that need the frame are
queued, Dask's active memory manager keeps the workers' copies of it. On a 2-worker LocalCluster
(M = 64, N+ = 20,000, per-model trainer), the workers fetched 4.4 MB from each other: the 3.6 MB
frame once, plus labels and keep rows (``scatter_traffic`` in ``benchmarks/bench_mia_dask.py``).
Sending the frame with every task would be 64 × 3.6 MB. The pool's records are not encrypted over
``tcp://``. On a network you do not trust, use ``tls://`` addresses with Dask's TLS configuration.

Determinism
-----------
A model's scores depend only on (seed, model index), on its fixed block for the batched trainer,
and on the library versions, never on which worker fits it or when. BLAS runs on one thread in
every fit (``threadpoolctl``; Dask's nanny also sets ``OMP_NUM_THREADS=1`` and friends). A Dask run
is therefore bit-identical to a local one when the workers run the same versions on the same kind
of CPU. Optimised BLAS kernels can differ between CPU families, so a cluster of mixed machines
gives identical runs only up to rounding.
"""

from __future__ import annotations

import numbers
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpaudit._errors import DPAuditError
from dpaudit._validation import one_of
from dpaudit.mia._defaults import BACKENDS, DEFAULT_BACKEND

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "LOCAL_CLUSTER_QUIET", "check_backend", "require_ml", "require_dask", "dask_client", "check_workers", "dask_runner",
           "local_runner", "version_mismatch"]


_INSTALL = "pip install 'dpaudit[dask]'"

#: LocalCluster options for a cluster on this machine only: no dashboard, and the scheduler's HTTP
#: server (which runs even without a dashboard, by default on port 8787, with a warning when that
#: port is taken) on a free port of the loopback interface.
LOCAL_CLUSTER_QUIET: dict[str, Any] = {"dashboard_address": None,
                                       "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}}


#: Local workers per core at the most (``n_jobs``): more only add processes waiting for a core.
MAX_JOBS_PER_CORE = 4


def check_backend(backend: Any, scheduler: Any, n_jobs: Any) -> tuple[str, str | None, int | None]:
    """Validate the backend options without connecting to anything; return them normalised.

    ``n_jobs`` is the number of local workers: joblib processes for ``"local"``, LocalCluster worker
    processes for ``"dask"`` without a scheduler. With a scheduler it must be left unset, because the
    cluster's worker threads decide how many models are fitted at once.

    Raises
    ------
    DPAuditError
        An unknown backend; a scheduler without backend ``"dask"``; a scheduler that is not a
        non-empty string; ``n_jobs`` that is not a non-zero whole number within the machine
        (:func:`_check_n_jobs`), or is given together with a scheduler; backend ``"dask"`` without dask and distributed installed.
    """
    backend = one_of("backend", backend, BACKENDS)
    if n_jobs is not None:
        n_jobs = _check_n_jobs(n_jobs)
    if scheduler is not None:
        if backend != "dask":
            raise DPAuditError(f"a scheduler ({scheduler!r}) applies to backend 'dask' only (--backend dask)")
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise DPAuditError(f"scheduler must be a Dask scheduler address such as 'tcp://host:8786', got {scheduler!r}")
        if n_jobs is not None:
            raise DPAuditError("n_jobs does not apply with a Dask scheduler: the cluster's workers decide how many "
                               "models are fitted at once (start them with `dask worker ADDRESS --nworkers N "
                               "--nthreads 1`)")
        scheduler = scheduler.strip()
    if backend == "dask":
        require_dask()
    return backend, scheduler, n_jobs


def _check_n_jobs(n_jobs: Any) -> int:
    """``n_jobs`` as joblib reads it (k > 0: k processes; −1: all cores; −2: all but one; …), within the
    machine: from −cores to ``MAX_JOBS_PER_CORE`` × cores. Each worker is a Python process with its
    own copy of the training frame, so an unbounded count (``-j 100000``) would exhaust the memory
    before the first model is fitted."""
    cores = os.cpu_count() or 1
    if isinstance(n_jobs, numbers.Integral) and not isinstance(n_jobs, bool) and n_jobs != 0:
        if -cores <= int(n_jobs) <= MAX_JOBS_PER_CORE * cores:
            return int(n_jobs)
    raise DPAuditError(
        f"n_jobs must be a non-zero whole number from {-cores} to {MAX_JOBS_PER_CORE * cores} on this machine "
        f"({cores} cores; -1: all cores), got {n_jobs!r}"
    )


def require_ml() -> None:
    try:
        import joblib  # noqa: F401
        import sklearn  # noqa: F401
        import threadpoolctl  # noqa: F401
    except ImportError as exc:
        raise DPAuditError(f"training models needs scikit-learn and joblib ({exc}): pip install 'dpaudit[mia]'") from None


def require_dask() -> None:
    """Refuse backend "dask" in one line, naming the install command, when dask or distributed is missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise DPAuditError(f"backend 'dask' needs dask and distributed ({exc}): {_INSTALL}") from None


def _local_workers(n_jobs: int | None) -> int:
    """LocalCluster worker processes for ``n_jobs`` (None or -1: one per core; -2: all but one; ...)."""
    cores = os.cpu_count() or 1
    if n_jobs is None:
        return cores
    return n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)


def _probe(address: str, timeout: float) -> None:
    """Open (and close) a TCP connection to a tcp:// or tls:// scheduler.

    A wrong host or port then fails at once with the operating system's reason ("connection
    refused"). Without the probe, distributed keeps retrying for its whole connect timeout.
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, location = parse_address(address)
    if scheme not in ("tcp", "tls"):
        return
    host, port = parse_host_port(location)
    with socket.create_connection((host, port), timeout=timeout):
        pass


@contextmanager
def dask_client(scheduler: str | None, n_jobs: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` of the scheduler at ``scheduler``, or of a new LocalCluster.

    Yields once at least one worker is connected. The client is closed on exit, and so is the
    LocalCluster if this function started it. The connect timeout is Dask's
    ``distributed.comm.timeouts.connect`` (30 s by default; for example
    ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s``). The same timeout bounds the wait for a first
    worker.

    Raises
    ------
    DPAuditError
        The address is malformed, the scheduler cannot be reached, or it has no worker within the
        timeout. Each case is one line that names the address and says what to start.
    """
    require_dask()
    import dask
    from dask.utils import parse_timedelta
    from distributed import Client, LocalCluster

    timeout = float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s") or 30.0)
    cluster = None
    if scheduler is None:
        try:
            cluster = LocalCluster(n_workers=_local_workers(n_jobs), threads_per_worker=1, processes=True,
                                   **LOCAL_CLUSTER_QUIET)
        except Exception as exc:  # ports, memory, a broken install: one line, not a traceback
            raise DPAuditError(f"could not start a local Dask cluster ({type(exc).__name__}: {exc})") from None
        target: Any = cluster
        where = "the local Dask cluster"
    else:
        try:
            _probe(scheduler, timeout)
            target = scheduler
        except (OSError, ValueError, TypeError) as exc:
            raise DPAuditError(f"cannot reach the Dask scheduler at {scheduler!r} ({type(exc).__name__}: {exc}); "
                               "start one with `dask scheduler` and give its address, e.g. tcp://host:8786") from None
        where = f"the Dask scheduler at {scheduler!r}"
    try:
        try:
            client = Client(target, set_as_default=False, timeout=timeout)
        except (OSError, ValueError, TimeoutError) as exc:
            raise DPAuditError(f"cannot connect to {where} ({type(exc).__name__}: {exc}); start one with "
                               "`dask scheduler` and give its address, e.g. tcp://host:8786") from None
        try:
            try:
                client.wait_for_workers(1, timeout=timeout)
            except TimeoutError:
                raise DPAuditError(f"{where} has no workers after {timeout:g} s; start some with `dask worker "
                                   f"{scheduler or 'ADDRESS'} --nthreads 1` on machines with dpaudit installed") from None
            yield client
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def _worker_report(model: str) -> dict[str, Any]:
    """Run on each worker: its versions, and whether (and how) it resolves ``model``."""
    from dpaudit.mia.train.models import resolve_model
    from dpaudit.mia.train.run import versions

    report: dict[str, Any] = {"versions": versions(), "host": socket.gethostname()}
    try:
        report["model"] = list(resolve_model(model))
    except Exception as exc:  # the worker's own one-line reason (a DPAuditError from resolve_model, mostly)
        report["error"] = f"{type(exc).__name__}: {exc}"
    return report


def version_mismatch(expected: dict[str, str], got: dict[str, str]) -> str:
    """``"scikit-learn 1.5.0 (driver: 1.9.1), ..."``: the packages whose versions differ, or ``""``.

    Examples
    --------
    >>> version_mismatch({"numpy": "2.4.6", "dpaudit": "0.1.0"}, {"numpy": "2.1.0", "dpaudit": "0.1.0"})
    'numpy 2.1.0 (driver: 2.4.6)'
    >>> version_mismatch({"numpy": "2.4.6"}, {"numpy": "2.4.6"})
    ''
    """
    keys = sorted(set(expected) | set(got))
    return ", ".join(f"{k} {got.get(k, 'missing')} (driver: {expected.get(k, 'missing')})"
                     for k in keys if got.get(k) != expected.get(k))


def check_workers(client: Any, model: str, model_params: dict[str, Any], expected: dict[str, str]) -> int:
    """Refuse a cluster whose workers could not reproduce this run; return the number of workers.

    Every worker must import dpaudit, resolve ``model`` (a factory's module must be importable
    there, TabPFN's weights present), and run the Python, numpy, scikit-learn and dpaudit versions
    of the driver (``expected``, the versions recorded in ``run.json``). A built-in model must
    also have the same parameters there as on the driver, which covers TabPFN's checkpoint hash.

    Raises
    ------
    DPAuditError
        Naming the first worker that fails and why.
    """
    try:
        reports = client.run(_worker_report, model, on_error="return")
    except Exception as exc:
        raise DPAuditError(f"could not run the version check on the Dask workers ({type(exc).__name__}: {exc})") from None
    for address, report in sorted(reports.items()):
        if isinstance(report, BaseException):  # e.g. dpaudit itself is not importable there
            raise DPAuditError(f"Dask worker {address} cannot run dpaudit ({type(report).__name__}: {report}); install "
                               "dpaudit with the driver's versions on every worker") from None
        where = f"Dask worker {address} ({report['host']})"
        if report.get("error"):
            raise DPAuditError(f"{where} cannot use model {model!r}: {report['error']}")
        diff = version_mismatch(expected, report["versions"])
        if diff:
            raise DPAuditError(f"{where} runs {diff}; its models would not be bit-identical to the driver's: install "
                               "the same versions on every worker")
        if ":" not in model and report["model"] != [model, model_params]:
            raise DPAuditError(f"{where} resolves model {model!r} to {report['model'][1]}, the driver to "
                               f"{model_params}")
    return len(reports)


def local_runner(n_jobs: int | None) -> Any:
    """joblib's ``Parallel`` for backend "local": results in completion order."""
    from joblib import Parallel

    return Parallel(n_jobs=1 if n_jobs is None else n_jobs, return_as="generator_unordered")


@contextmanager
def dask_runner(client: Any) -> Iterator[Any]:
    """joblib's ``Parallel`` on ``client``'s cluster, with every task submitted at once.

    Results arrive in completion order. While the context is active, joblib uses the Dask backend.
    """
    from joblib import Parallel, parallel_config

    with parallel_config(backend="dask", client=client):
        yield Parallel(n_jobs=-1, return_as="generator_unordered", pre_dispatch="all")
