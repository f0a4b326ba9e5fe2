"""A class through a Dask LocalCluster: chunks of submissions against one task per submission.

Issue 38: one Dask task per submission stalls the scheduler at a MOOC's count
(dask/distributed#2181). This grades the same synthetic class (correct and buggy .py files)
three ways, each in a fresh process so that peak memory is each one's own: the local pool
(the floor), Dask with one task per submission (``--chunk-size 1``) and Dask in chunks. It
reports wall time per submission, the overhead per submission over the local pool, and the
peak memory of the client process (which, with a LocalCluster, also holds the scheduler).

Run: python bench/bench_dask.py [--submissions 10000] [--workers 2] [--chunk-size 50]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIXTURES = sorted((ROOT / "tests" / "submissions" / "attention").glob("*.py"))


def make_class(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for index in range(count):
        (folder / f"student{index:05d}.py").write_text(FIXTURES[index % len(FIXTURES)].read_text())


def one_run(mode: str, count: int, workers: int, chunk_size: int) -> dict[str, float]:
    """Grade ``count`` submissions in this process (``mode``: local, single or chunked)."""
    from grader.batch import discover, run_batch
    from grader.config import Limits

    with tempfile.TemporaryDirectory() as scratch:
        make_class(Path(scratch) / "class", count)
        entries = discover([str(Path(scratch) / "class")])
        limits = Limits(call_seconds=0.5)
        started = time.perf_counter()
        if mode == "local":
            result = run_batch(entries, "attention", Path(scratch) / "out", jobs=workers,
                               limits=limits, resume=False)
        else:
            from distributed import LocalCluster

            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster:
                started = time.perf_counter()  # (the cluster's start-up is not the grading)
                result = run_batch(entries, "attention", Path(scratch) / "out",
                                   executor="dask", scheduler=cluster.scheduler_address,
                                   limits=limits, resume=False,
                                   chunk_size=1 if mode == "single" else chunk_size)
        seconds = time.perf_counter() - started
    assert len(result.rows) == count and result.graded == count
    return {"seconds": seconds, "ms_per_submission": 1000 * seconds / count,
            "client_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "worker_peak_mb": result.worker_peak_rss_mb}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=50)
    parser.add_argument("--modes", default="local,chunked,single")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # (a child's own run)
    arguments = parser.parse_args()
    if arguments.one:
        print(json.dumps(one_run(arguments.one, arguments.submissions, arguments.workers,
                                 arguments.chunk_size)))
        return 0
    results = {}
    for mode in arguments.modes.split(","):
        done = subprocess.run([sys.executable, __file__, "--one", mode, "--submissions",
                               str(arguments.submissions), "--workers", str(arguments.workers),
                               "--chunk-size", str(arguments.chunk_size)],
                              capture_output=True, text=True, check=True)
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{mode:8} {results[mode]['seconds']:8.1f} s  "
              f"{results[mode]['ms_per_submission']:6.1f} ms/submission  "
              f"client peak {results[mode]['client_peak_mb']:6.0f} MB  "
              f"worker peak {results[mode]['worker_peak_mb']:5.0f} MB", flush=True)
    if "local" in results:
        floor = results["local"]["ms_per_submission"]
        for mode in results:
            if mode != "local":
                print(f"{mode}: {results[mode]['ms_per_submission'] - floor:+.1f} ms per "
                      "submission over the local pool")
    print(json.dumps({"submissions": arguments.submissions, "workers": arguments.workers,
                      "chunk_size": arguments.chunk_size, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
