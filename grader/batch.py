"""Grading a class: find the submissions, grade each in isolation, write reports and a summary.

- Inputs: files, folders and globs; a folder per student (GitHub Classroom clones); Gradescope's
  "export submissions" folder (read by ``grader.platforms.gradescope``).
- Each submission is graded by a worker (a local process pool with a pre-warmed fork server, or a
  Dask cluster); the submission itself runs in its own sandboxed child, so a crash, hang or memory
  blow-up is that submission's report and nobody else's.
- One report per submission, written atomically; re-running skips submissions whose report is up
  to date (same content hash, grader version, assignment, seed and limits).
- ``summary.csv``, ``summary.json`` and the class report (``grader.class_report``).
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import dataclasses
import fcntl
import glob
import hashlib
import io
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.config import DEFAULT_LIMITS, Limits
from grader.load import candidates, has_submission_suffix, stays_within
from grader.model import printable_name
from grader.platforms import gradescope
from grader.version import __version__


@dataclass(frozen=True)
class Entry:
    """One student's submission: who, and the candidate files (the best-graded one counts)."""

    student: str
    files: tuple[Path, ...]


def discover(paths: Iterable[str]) -> list[Entry]:
    """Files as given; a Gradescope export; else each file in a folder is a student and each
    sub-folder is a student (its files are the candidates). Globs are expanded."""
    entries: dict[tuple[str, tuple[Path, ...]], Entry] = {}

    def add(entry: Entry) -> None:
        entries.setdefault((entry.student, entry.files), entry)

    for raw in paths:
        matches = [Path(p) for p in sorted(glob.glob(raw, recursive=True))] or [Path(raw)]
        for path in matches:
            if path.is_file() and has_submission_suffix(path):
                # a file of its own: a link is followed nowhere (not even to a classmate's)
                add(Entry(printable_name(path.stem), () if path.is_symlink() else (path,)))
            elif gradescope.is_export(path):
                for student, files in gradescope.export_submissions(path):
                    add(Entry(student, files))
            elif path.is_dir():
                for child in sorted(path.iterdir()):
                    if child.name.startswith((".", "__")):
                        continue
                    if child.is_file() and has_submission_suffix(child):
                        add(Entry(printable_name(child.stem),
                                  () if child.is_symlink() else (child,)))
                    elif child.is_dir() and not child.is_symlink():
                        add(Entry(printable_name(child.name), candidates(child)))
    return list(entries.values())


def content_hash(files: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(os.fsencode(path.name) + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError as exc:
            digest.update(repr(exc).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def report_name(label: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_.")[:100] or "submission"
    name, counter = base, 1
    while name in taken:
        counter += 1
        name = f"{base}-{counter}"
    taken.add(name)
    return name + ".json"


@dataclass(frozen=True)
class Job:
    entry: Entry
    assignment: str
    seed: int
    limits: Limits
    key: dict[str, Any] = field(default_factory=dict)


#: libraries that take long to import (scipy.special alone costs a run 0.2 s of CPU, ten runs'
#: worth of grading), under the name students import them by
SLOW_IMPORTS = {"scipy": "scipy.special", "torch": "torch", "tensorflow": "tensorflow",
                "jax": "jax"}
#: an import statement, in a .py file or in a notebook's JSON (where a line inside a cell's
#: source string starts after a "\n" escape)
_IMPORTS_SLOW = re.compile(r"(?:^|[\s\"';]|\\n)(?:from|import)\s+(" + "|".join(SLOW_IMPORTS)
                           + r")\b", re.MULTILINE)


def slow_imports(files: Sequence[Path]) -> tuple[str, ...]:
    """The slow libraries these files import (a hint for the fork server, never a verdict's)."""
    found: set[str] = set()
    for path in files:
        if not stays_within(path, path.parent):
            continue
        try:
            with open(path, "rb") as handle:
                text = handle.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            continue
        # (the pattern tries every position of the text, 11 ms for a notebook's 1 MB of
        # outputs; a plain search for the names first makes a text without them cost nothing)
        if any(name in text for name in SLOW_IMPORTS):
            found.update(SLOW_IMPORTS[name] for name in _IMPORTS_SLOW.findall(text))
    return tuple(sorted(found))


def grade_entry(job: Job) -> dict[str, Any]:
    """Grade one student's submission: every candidate file, keeping the best report."""
    from grader import registry, sandbox
    from grader.pipeline import grade_best_of

    entry = job.entry
    # the fork servers import the course's framework once, not every fork (a torch class
    # paid torch's import for every student); a slow library a student imports goes into a
    # second server, forked from the first, which forks the students who import it
    framework = registry.get(job.assignment).interface.arrays
    if framework in registry.FRAMEWORK_PACKAGES:
        sandbox.warm_frameworks((framework,))
    sandbox.fork_from(slow_imports(entry.files))
    report = grade_best_of(entry.files, assignment=job.assignment, seed=job.seed,
                           limits=job.limits, label=entry.student)
    report["metadata"].update(student=entry.student, batch_key=job.key,
                              worker_peak_rss_mb=_peak_rss_mb())
    return report


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / 1024 if sys.platform != "darwin" else peak / 2**20, 1)


def _warm_worker(scratch: str | None = None) -> None:
    """Pool initializer: make ``scratch`` this worker's temporary folder (its runs' folders go
    there), import the grading stages and start the fork server once."""
    from grader import pipeline, sandbox

    _die_with_batch()
    if scratch is not None:
        tempfile.tempdir = scratch
    sandbox.start_fork_server()
    pipeline.import_numeric_stages()


def _die_with_batch() -> None:
    """In a pool worker: be killed when the process that started it dies (a batch killed with
    ``kill -9`` must not leave its workers, their fork servers or their runs running, which
    die with them). Linux only."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # (it died before the death signal was asked for)
        os._exit(1)


def _grade_entry_warm(job: Job) -> dict[str, Any]:
    """``grade_entry`` on a Dask worker, through that worker's own pre-warmed fork server (one
    run at a time per process, see ``grader.sandbox.run``)."""
    from grader import sandbox

    sandbox.use_fork_server(True)
    return grade_entry(job)


SCRATCH_PREFIX = "attention-grader-batch-"
#: the file in a batch's scratch folder that the batch holds locked (flock) while it lives
SCRATCH_LOCK = ".alive"
#: a scratch folder without its lock file is a batch's that died as it made it, once this old
SCRATCH_UNLOCKED_SECONDS = 3600.0


@contextmanager
def batch_scratch() -> Iterator[str]:
    """A temporary folder for the workers of one batch, removed with all in it when the batch
    ends: a worker that is killed (by a submission running as its user, say) leaves its runs'
    folders behind, and only a process that outlives it can remove them. The batch holds a
    lock in it while it lives: the folders of batches that died (``kill -9``) are removed by
    the next batch, when it starts (``remove_stale_scratch``)."""
    remove_stale_scratch()
    scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
    lock = -1
    try:
        lock = os.open(os.path.join(scratch, SCRATCH_LOCK),
                       os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
        # searchable, not listable, as each run's own folder in it (runs that continue as a uid
        # of their own reach their folder by its absolute path)
        os.chmod(scratch, 0o711)
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if lock >= 0:
            os.close(lock)


def remove_stale_scratch(folder: str | None = None) -> list[str]:
    """Remove the scratch folders that batches of this user left in ``folder`` (the temporary
    folder) when they died: those whose lock no process holds. Returns them."""
    removed = []
    try:
        entries = list(os.scandir(folder or tempfile.gettempdir()))
    except OSError:
        return []
    for entry in entries:
        try:
            if (not entry.name.startswith(SCRATCH_PREFIX)
                    or not entry.is_dir(follow_symlinks=False)
                    or entry.stat(follow_symlinks=False).st_uid != os.getuid()):
                continue
            lock = os.open(os.path.join(entry.path, SCRATCH_LOCK),
                           os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                age = time.time() - entry.stat(follow_symlinks=False).st_mtime
                if age > SCRATCH_UNLOCKED_SECONDS:
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(entry.path)
            continue
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # (a live batch's)
            os.close(lock)
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        finally:
            os.close(lock)
    return removed


def start_method() -> str:
    # Forking is cheapest and works from any script, but forking a multi-threaded process is
    # unsafe: then workers start from a clean forkserver instead (which, like "spawn", needs the
    # caller's script to guard its entry point with `if __name__ == "__main__":`).
    return "fork" if threading.active_count() == 1 else "forkserver"


@contextmanager
def warmed_parent(jobs: Sequence[Job], method: str) -> Iterator[None]:
    """Where the pool's workers are forked from this process, what each would otherwise work
    out for itself is worked out here, once, before they are: a fork server for them to fork
    theirs from (started first, with the course's framework, so that it starts up while this
    process goes on), and one with the slow libraries the students import, forked from it; the
    numeric stages, the assignments' probes and reference answers."""
    if method != "fork" or not jobs:
        yield
        return
    from grader import registry, sandbox
    from grader.pipeline import warm_up

    assignments = sorted({(job.assignment, job.seed) for job in jobs})
    frameworks = {registry.get(name).interface.arrays for name, _ in assignments
                  if registry.exists(name)}
    with sandbox.shared_fork_server(tuple(sorted(frameworks & set(registry.FRAMEWORK_PACKAGES)))):
        for name, seed in assignments:
            # (only a head start: what fails here fails again for each submission, and is
            # reported there)
            with contextlib.suppress(Exception):
                warm_up(name, seed)
        # (after the warm-up, when the shared server is up: it forks this one at once)
        sandbox.share_libraries(tuple(sorted(set().union(
            *(slow_imports(job.entry.files) for job in jobs)))))
        yield


@contextmanager
def local_executor(jobs: int, scratch: str | None = None, method: str | None = None
                   ) -> Iterator[Callable[[Job], Future[dict[str, Any]]]]:
    method = method or start_method()
    if method == "fork":  # imported once here, not once per worker (they inherit it)
        from grader.pipeline import import_numeric_stages

        import_numeric_stages()
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=context,
                             initializer=_warm_worker, initargs=(scratch,)) as pool:
        yield lambda job: pool.submit(grade_entry, job)


@contextmanager
def dask_executor(scheduler: str) -> Iterator[Callable[[Job], Any]]:
    """Submit the same ``grade_entry`` to a Dask cluster (``pip install attention-grader[distributed]``)."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise RuntimeError("--executor dask needs the `distributed` package: "
                           "pip install 'attention-grader[distributed]'") from exc
    with Client(scheduler) as client:
        yield lambda job: client.submit(_grade_entry_warm, job, pure=False)


class Progress:
    """A bar with count, rate and ETA on a terminal; one plain line per submission otherwise."""

    def __init__(self, total: int, stream: Any = None, interactive: bool | None = None) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = (self.stream.isatty() if interactive is None else interactive)

    def advance(self, line: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate else 0.0
        if self.interactive:
            filled = int(30 * self.done / max(1, self.total))
            self.stream.write(f"\r[{'#' * filled}{' ' * (30 - filled)}] {self.done}/{self.total}"
                              f"  {rate:.1f}/s  ETA {int(left) // 60}:{int(left) % 60:02d} ")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(f"[{self.done}/{self.total}] {line}\n")
        self.stream.flush()


def _up_to_date(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(report, dict) and report.get("metadata", {}).get("batch_key") == key:
        return report
    return None


def _row(entry: Entry, name: str, report: dict[str, Any]) -> dict[str, Any]:
    meta = report.get("metadata", {})
    return {
        "student": entry.student,
        "submission": meta.get("submission_path") or (printable_name(str(entry.files[0])) if entry.files
                                                      else ""),
        "report": name,
        "status": report["status"],
        "score": report["score"],
        "max_score": report["max_score"],
        "misconceptions": [m["id"] for m in report["misconceptions"]],
        "errors": [e["kind"] for e in report["errors"]],
        "failed_checks": [c["id"] for c in report["checks"] if not c["passed"]],
        "seconds": meta.get("duration_seconds", 0.0),
    }


@dataclass
class BatchResult:
    rows: list[dict[str, Any]]
    graded: int
    reused: int
    seconds: float
    worker_peak_rss_mb: float


def run_batch(entries: Sequence[Entry], assignment: str, out_dir: Path, *, jobs: int = 1,
              seed: int = 0, limits: Limits = DEFAULT_LIMITS, executor: str = "local",
              scheduler: str | None = None, resume: bool = True,
              progress: Progress | None = None) -> BatchResult:
    from grader.files import write_atomically

    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    names = [report_name(e.student, taken) for e in entries]
    rows: dict[int, dict[str, Any]] = {}
    todo: list[tuple[int, Job]] = []
    # every submission of the class is one no other submission may read
    private = dataclasses.replace(limits, private_paths=tuple(sorted(
        {str(path.resolve()) for entry in entries for path in entry.files})))
    for index, entry in enumerate(entries):
        key = {"content_sha256": content_hash(entry.files), "grader_version": __version__,
               "assignment": assignment, "seed": seed,
               # (as it reads back from a report's JSON: tuples as lists)
               "limits": json.loads(json.dumps(limits.as_dict()))}
        existing = _up_to_date(out_dir / names[index], key) if resume else None
        if existing is not None:
            rows[index] = _row(entry, names[index], existing)
            if progress:
                progress.advance(f"{entry.student}: up to date")
        else:
            todo.append((index, Job(entry, assignment, seed, private, key)))
    peak = 0.0

    def record(index: int, job: Job, report: dict[str, Any]) -> None:
        nonlocal peak
        peak = max(peak, float(report["metadata"].get("worker_peak_rss_mb", 0.0)))
        write_atomically(out_dir / names[index],
                         json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        rows[index] = row = _row(job.entry, names[index], report)
        if progress:
            progress.advance(f"{job.entry.student}: {row['score']:g}/{row['max_score']:g} "
                             f"{' '.join(row['misconceptions'] + row['errors'])}".rstrip())

    if executor == "dask":
        from distributed import as_completed as dask_completed

        with dask_executor(scheduler or "") as submit:
            futures = {submit(job): (index, job) for index, job in todo}
            for future in dask_completed(list(futures)):
                index, job = futures[future]
                record(index, job, _collect(future, job))
    else:
        _run_locally(todo, jobs, record)
    ordered = [rows[i] for i in range(len(entries))]
    write_summaries(ordered, out_dir, assignment)
    return BatchResult(ordered, len(todo), len(entries) - len(todo),
                       time.monotonic() - started, peak)


def _run_locally(todo: Sequence[tuple[int, Job]], jobs: int,
                 record: Callable[[int, Job, dict[str, Any]], None]) -> None:
    """Grade in a local pool. A submission that kills its worker process (same user, so it can)
    breaks the whole pool: the unfinished ones are graded again in a new pool, and if that breaks
    too, one at a time, so only the submission that does it is reported as crashed."""
    pending = list(todo)
    method = start_method()
    with batch_scratch() as scratch, warmed_parent([job for _, job in todo], method):
        for round_number in range(3):
            if not pending:
                return
            broken: list[tuple[int, Job]] = []
            batches = [pending] if round_number < 2 else [[item] for item in pending]
            for batch in batches:
                with local_executor(min(jobs, len(batch)), scratch, method) as submit:
                    futures = {submit(job): (index, job) for index, job in batch}
                    for future in as_completed(futures):
                        index, job = futures[future]
                        if isinstance(future.exception(), BrokenProcessPool) and round_number < 2:
                            broken.append((index, job))
                        else:
                            record(index, job, _collect(future, job))
            pending = sorted(broken, key=lambda item: item[0])


def _collect(future: Any, job: Job) -> dict[str, Any]:
    try:
        return dict(future.result())
    except Exception as exc:  # the worker itself died (e.g. killed): report it for this one only
        from grader.model import GraderError
        from grader.pipeline import error_report

        message = (f"grader error: {exc!r}" if not isinstance(exc, BrokenProcessPool) else
                   "the grading process died while grading this submission alone (did the "
                   "submission kill it?)")
        report = error_report(job.assignment, [GraderError("crashed", message)],
                              {"submission": job.entry.student})
        report["metadata"].update(student=job.entry.student)
        return report


#: what makes a spreadsheet read a cell as a formula (OWASP's "CSV injection")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def spreadsheet_text(value: object) -> str:
    """A student-controlled name as a CSV cell that no spreadsheet evaluates."""
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def write_summaries(rows: Sequence[dict[str, Any]], out_dir: Path, assignment: str) -> None:
    from grader.class_report import write_class_report
    from grader.files import write_atomically

    write_atomically(out_dir / "summary.json", json.dumps(list(rows), indent=2,
                                                          ensure_ascii=False) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", "submission", "status", "score", "max_score", "misconceptions",
                     "errors", "report"])
    for row in rows:
        writer.writerow([spreadsheet_text(row["student"]), spreadsheet_text(row["submission"]),
                         row["status"], row["score"], row["max_score"],
                         " ".join(row["misconceptions"]), " ".join(row["errors"]),
                         spreadsheet_text(row["report"])])
    write_atomically(out_dir / "summary.csv", buffer.getvalue())
    write_class_report(rows, out_dir, assignment)
