"""Benchmark: ``dpaudit mia train`` on this machine vs on a Dask LocalCluster of the same size.

Three ways to fit the same run (Adult, logistic regression, N = N+/2), each writing its run
directory, as ``train_run`` does:

* ``local``: ``train_run(..., n_jobs=W)``, joblib's process pool (loky) with W workers;
* ``dask``: ``train_run(..., backend="dask", scheduler=ADDRESS)`` on a LocalCluster of W
  single-threaded worker processes, started once before the timing (a running cluster);
* ``dask+start``: ``train_run(..., backend="dask", n_jobs=W)``, which starts its own LocalCluster and
  closes it again, as ``dpaudit mia train --backend dask`` without ``--scheduler`` does.

After one untimed warm-up call of each, the calls are interleaved. Round r runs the sides in order
when r is even and in reverse order when r is odd, so load from other processes on the shared cores
hits every side alike. ``os.getloadavg()`` is recorded before every round. The first run of each
side is compared file by file with the first local run, which must be bit-identical.

:func:`scatter_traffic` measures what the frame costs on the network. It counts the bytes that the
workers fetch from each other, with every task submitted at once (``pre_dispatch="all"``, what
``train_run`` does) and with joblib's default window of ``2 * n_jobs`` tasks in flight.

Run: ``DPAUDIT_DATA=... python benchmarks/bench_mia_dask.py [--models 64] [--pool 5000]
[--trainer per-model] [--workers 2] [--repeat 3]``. Import: :func:`compare_local_dask`,
:func:`scatter_traffic`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _suite  # noqa: F401  (this tree's src/ first on sys.path)
from _suite.timing import load1

from dpaudit.mia.train import train_run
from dpaudit.mia.train.backends import LOCAL_CLUSTER_QUIET

SIDES = ("local", "dask", "dask+start")


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def compare_local_dask(*, n_models: int = 64, pool_size: int = 5000, trainer: str = "per-model",
                       model: str = "logreg", dataset: str = "adult", n_workers: int = 2, repeat: int = 3,
                       seed: int = 0, sides: tuple[str, ...] = SIDES) -> dict[str, Any]:
    """Wall times of one ``train_run`` on each side (module docstring), interleaved, in this process.

    Parameters
    ----------
    n_models, pool_size, trainer, model, dataset, seed
        The run (``train_run``'s arguments).
    n_workers : int
        W: local joblib workers and LocalCluster worker processes (1 thread each).
    repeat : int
        Timed rounds, each running every side once, after one untimed warm-up round.
    sides : tuple of str
        A subset of :data:`SIDES`.

    Returns
    -------
    dict
        ``{"config": {...}, "cpus": int, "cluster_start_s": float, "seconds": {side: [s, ...]},
        "median_s": {side: s}, "ratio_to_local": {side: median / median(local)},
        "load_before_round": [load1, ...], "identical": {side: bool}}``.
        ``cluster_start_s`` is the time to start the shared cluster and connect to it; it is not
        part of the ``dask`` side's times.
    """
    from distributed import Client, LocalCluster

    unknown = set(sides) - set(SIDES)
    if unknown or "local" not in sides:
        raise ValueError(f"sides must include 'local' and be among {SIDES}, got {sides}")
    kw = {"dataset": dataset, "model": model, "n_models": n_models, "pool_size": pool_size, "seed": seed,
          "trainer": trainer, "progress": False}
    tmp = Path(tempfile.mkdtemp(prefix="bench_mia_dask_"))
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, **LOCAL_CLUSTER_QUIET)
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(n_workers)
    cluster_start = time.perf_counter() - t0
    calls = {
        "local": lambda out: train_run(out, **kw, n_jobs=n_workers),
        "dask": lambda out: train_run(out, **kw, backend="dask", scheduler=cluster.scheduler_address),
        "dask+start": lambda out: train_run(out, **kw, backend="dask", n_jobs=n_workers),
    }
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    identical: dict[str, bool] = {}
    loads: list[float] = []
    try:
        reference = calls["local"](tmp / "reference")  # the warm-up round, and the bit-identity check
        for side in sides:
            identical[side] = _files(calls[side](tmp / f"warm-{side}")) == _files(reference)
        for r in range(repeat):
            loads.append(load1())
            for side in (sides if r % 2 == 0 else sides[::-1]):
                out = tmp / f"{side}-{r}"
                start = time.perf_counter()
                calls[side](out)
                seconds[side].append(time.perf_counter() - start)
                shutil.rmtree(out)
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)
    medians = {side: statistics.median(v) for side, v in seconds.items()}
    return {"config": {**kw, "n_workers": n_workers, "repeat": repeat}, "cpus": os.cpu_count(),
            "cluster_start_s": cluster_start, "seconds": seconds, "median_s": medians,
            "ratio_to_local": {side: medians[side] / medians["local"] for side in sides},
            "load_before_round": loads, "identical": identical}


def scatter_traffic(*, n_models: int = 64, pool_size: int = 20_000, trainer: str = "per-model", n_workers: int = 2,
                    seed: int = 0) -> dict[str, Any]:
    """Bytes the workers fetch from each other, with all tasks submitted at once or ``2 * n_jobs`` at a time.

    Both ways run the trainer's own tasks (``_train_models`` with the same frame, labels and keep
    rows that ``train_run`` passes) through joblib's Dask backend on a fresh LocalCluster. joblib
    scatters the frame to one worker, and the others fetch it from there. Dask's active memory
    manager drops a worker's copy when no queued task there needs it, so with a small window the
    frame is fetched again and again.

    Returns
    -------
    dict
        ``{"frame_mb": pickled size of the pool's feature frame, "tasks": int, "pre_dispatch": {"all" |
        "2*n_jobs": {"peer_mb": float, "peer_transfers": int, "seconds": float}}}``.
    """
    import pickle

    import numpy as np
    from distributed import Client, LocalCluster
    from joblib import Parallel, delayed, parallel_config

    from dpaudit.mia.designs import keep_matrix
    from dpaudit.mia.train.data import registered
    from dpaudit.mia.train.run import versions
    from dpaudit.mia.train.trainer import _train_models

    source = registered("adult")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    idx = np.sort(rng.choice(len(source.frame), pool_size, replace=False))
    features, y = source.features(idx), source.labels(idx)
    keep = keep_matrix(n_models, pool_size, seed=seed)
    size = 64 if trainer == "batched" else 1
    tasks = [list(range(lo, min(lo + size, n_models))) for lo in range(0, n_models, size)]
    expected = versions()
    out: dict[str, Any] = {"frame_mb": len(pickle.dumps(features, protocol=5)) / 1e6, "tasks": len(tasks),
                           "pre_dispatch": {}}

    def incoming(dask_worker: Any) -> tuple[int, int]:
        log = list(dask_worker.transfer_incoming_log)
        return sum(int(entry["total"]) for entry in log), len(log)

    for pre in ("all", "2*n_jobs"):
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, **LOCAL_CLUSTER_QUIET) as cluster, \
                Client(cluster, set_as_default=False) as client:
            start = time.perf_counter()
            with parallel_config(backend="dask", client=client):
                jobs = (delayed(_train_models)(t, keep[t], features, y, source.categorical, source.numeric, "logreg",
                                               seed, trainer, expected) for t in tasks)
                done = sum(len(r) for r in Parallel(n_jobs=-1, pre_dispatch=pre, return_as="generator_unordered")(jobs))
            assert done == n_models
            seconds = time.perf_counter() - start
            per_worker = client.run(incoming)
            out["pre_dispatch"][pre] = {"peer_mb": sum(b for b, _ in per_worker.values()) / 1e6,
                                        "peer_transfers": sum(n for _, n in per_worker.values()), "seconds": seconds}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=64)
    ap.add_argument("--pool", type=int, default=5000)
    ap.add_argument("--trainer", default="per-model", choices=("per-model", "batched"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--traffic", action="store_true", help="also measure peer traffic (scatter_traffic)")
    args = ap.parse_args()
    res = compare_local_dask(n_models=args.models, pool_size=args.pool, trainer=args.trainer, n_workers=args.workers,
                             repeat=args.repeat, seed=args.seed)
    cfg = res["config"]
    print(f"Adult, {cfg['model']} ({cfg['trainer']}): M = {cfg['n_models']}, N+ = {cfg['pool_size']:,}; "
          f"{cfg['n_workers']} workers; {res['cpus']} CPUs; load before each round: "
          f"{', '.join(f'{x:.2f}' for x in res['load_before_round'])}")
    print(f"  LocalCluster start + connect: {res['cluster_start_s']:.2f} s (not in the 'dask' row)")
    print(f"  {'side':<12} {'median s':>9} {'models/s':>9} {'vs local':>9}  rounds (s)            identical")
    for side, times in res["seconds"].items():
        med = res["median_s"][side]
        print(f"  {side:<12} {med:>9.2f} {cfg['n_models'] / med:>9.1f} {res['ratio_to_local'][side]:>8.2f}x  "
              f"{', '.join(f'{t:.2f}' for t in times):<21} {res['identical'][side]}")
    if args.traffic:
        traffic = scatter_traffic(n_models=args.models, pool_size=args.pool, trainer=args.trainer,
                                  n_workers=args.workers, seed=args.seed)
        print(f"  peer traffic: frame {traffic['frame_mb']:.2f} MB pickled, {traffic['tasks']} tasks")
        for pre, row in traffic["pre_dispatch"].items():
            print(f"    pre_dispatch={pre:<9} {row['peer_mb']:8.2f} MB in {row['peer_transfers']} transfers, "
                  f"{row['seconds']:.2f} s")
    return 0 if all(res["identical"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
