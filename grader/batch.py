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
    """Submit the same ``grade_entry`` to a Dask cluster (``pip install ".[distributed]"`` in the
    grader's repository)."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise RuntimeError("--executor dask needs the `distributed` package: in the grader's "
                           "repository, pip install '.[distributed]'") from exc
    with Client(scheduler) as client:
        yield lambda job: client.submit(_grade_entry_warm, job, pure=False)


# --- a class in shards ----------------------------------------------------------------------

SHARD_FILE = "shard.json"


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (from 1) of ``count`` shards of a class. A student's shard depends on
    their name alone (a hash of it), so it is the same on every run and whatever else the class
    holds: re-running a shard, or a class with students added, never moves anyone's report."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index}/{self.count}: K must be between 1 and N")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"``."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match:
            raise ValueError(f"{text!r} is not a shard K/N (say 3/8)")
        return cls(int(match.group(1)), int(match.group(2)))

    def holds(self, student: str) -> bool:
        digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1


def write_shard_manifest(out_dir: Path, shard: Shard, assignment: str, class_size: int,
                         positions: Sequence[int]) -> None:
    """What ``merge`` needs of a shard: which it is, of which class, and where each of its
    rows (``summary.json``, in the same order) stands in the class."""
    from grader.files import write_atomically

    write_atomically(out_dir / SHARD_FILE, json.dumps({
        "shard": [shard.index, shard.count], "assignment": assignment,
        "class_size": class_size, "positions": list(positions)}) + "\n")


def merge_shards(shard_dirs: Sequence[Path], out_dir: Path) -> list[dict[str, Any]]:
    """Join the folders of a class's shards into ``out_dir``: every report, and the summaries
    and class report of the whole class, in the order one unsharded batch writes them. Raises
    ValueError when the folders are not all the shards of one class, each once."""
    from grader.files import write_atomically

    manifests = []
    for folder in shard_dirs:
        try:
            manifest = json.loads((folder / SHARD_FILE).read_text(encoding="utf-8"))
            rows = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{folder} is not a finished shard ({exc})") from None
        if len(rows) != len(manifest["positions"]):
            raise ValueError(f"{folder}: summary.json and {SHARD_FILE} disagree")
        manifests.append((folder, manifest, rows))
    classes = {(m["assignment"], m["class_size"], m["shard"][1]) for _, m, _ in manifests}
    if len(classes) != 1:
        raise ValueError("the folders are shards of different classes (or shard counts)")
    assignment, class_size, count = classes.pop()
    found = sorted(m["shard"][0] for _, m, _ in manifests)
    if found != list(range(1, count + 1)):
        missing = sorted(set(range(1, count + 1)) - set(found))
        twice = sorted({k for k in found if found.count(k) > 1})
        raise ValueError(f"shards of {count}: missing {missing or 'none'}, "
                         f"given twice {twice or 'none'}")
    ordered: dict[int, dict[str, Any]] = {}
    out_dir.mkdir(parents=True, exist_ok=True)
    for folder, manifest, rows in manifests:
        for position, row in zip(manifest["positions"], rows):
            ordered[int(position)] = row
            source = folder / row["report"]
            if source.resolve() != (out_dir / row["report"]).resolve():
                write_atomically(out_dir / row["report"], source.read_text(encoding="utf-8"))
    if sorted(ordered) != list(range(class_size)):
        raise ValueError("the shards do not cover the class once each")
    merged = [ordered[i] for i in range(class_size)]
    write_summaries(merged, out_dir, assignment)
    return merged


# --- Dask, in chunks -----------------------------------------------------------------------------

#: submissions per Dask task: one task each stalls the scheduler at a MOOC's count
#: (dask/distributed#2181); a chunk is graded by one worker through its own fork server
DASK_CHUNK = 50


def _grade_chunk(items: Sequence[tuple[str, Job]], out_dir: str) -> list[tuple[dict[str, Any], float]]:
    """On a Dask worker: grade a chunk of submissions one after another through this worker's
    own pre-warmed fork server, writing each report (atomically) as soon as it is done, and
    return only the summary rows. A report already up to date is not graded again, so a chunk
    retried after its worker was killed grades only what that worker had not finished."""
    from grader import sandbox
    from grader.files import write_atomically

    sandbox.use_fork_server(True)
    done = []
    for name, job in items:
        path = Path(out_dir) / name
        report = _up_to_date(path, job.key)
        if report is None:
            try:
                report = grade_entry(job)
            except Exception as exc:  # the grader's own failure: this submission's report
                report = _crashed_report(job, f"grader error: {exc!r}")
            write_atomically(path, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        done.append((_row(job.entry, name, report),
                     float(report["metadata"].get("worker_peak_rss_mb", 0.0))))
    return done


def _crashed_report(job: Job, message: str) -> dict[str, Any]:
    from grader.model import GraderError
    from grader.pipeline import error_report

    report = error_report(job.assignment, [GraderError("crashed", message)],
                          {"submission": job.entry.student})
    report["metadata"].update(student=job.entry.student)  # (no key: a re-run grades it again)
    return report


def run_dask_chunks(todo: Sequence[tuple[int, str, Job]], out_dir: Path, scheduler: str,
                    chunk_size: int,
                    recorded: Callable[[int, Job, dict[str, Any], float], None]) -> None:
    """Grade ``todo`` (position, report name, job) on a Dask cluster in chunks of
    ``chunk_size``: the workers write the reports into ``out_dir`` (which they must see, as
    they see the submissions) and send back rows, so the client holds one row per submission,
    not a report. A chunk whose worker keeps dying is graded one submission per task, and a
    submission that still kills its worker is reported as crashed, alone."""
    from distributed import as_completed as dask_completed

    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - distributed is in the test extra
        raise RuntimeError("--executor dask needs the `distributed` package: "
                           "pip install '.[distributed]' in the grader's repository") from exc
    items = list(todo)
    with Client(scheduler) as client:
        chunks = [items[start:start + chunk_size] for start in range(0, len(items), chunk_size)]
        futures = {client.submit(_grade_chunk, [(name, job) for _, name, job in chunk],
                                 str(out_dir), pure=False): chunk for chunk in chunks}
        failed: list[tuple[int, str, Job]] = []
        for future in dask_completed(list(futures)):
            chunk = futures.pop(future)
            try:
                results = future.result()
            except Exception:  # (its worker died more often than Dask retries)
                failed += chunk if len(chunk) > 1 else []
                for index, name, job in chunk if len(chunk) == 1 else []:
                    recorded(index, job, _crashed_row(job, name, out_dir), 0.0)
                continue
            for (index, _, job), (row, peak) in zip(chunk, results):
                recorded(index, job, row, peak)
        singles = {client.submit(_grade_chunk, [(name, job)], str(out_dir), pure=False):
                   (index, name, job) for index, name, job in failed}
        for future in dask_completed(list(singles)):
            index, name, job = singles[future]
            try:
                [(row, peak)] = future.result()
            except Exception:
                row, peak = _crashed_row(job, name, out_dir), 0.0
            recorded(index, job, row, peak)


def _crashed_row(job: Job, name: str, out_dir: Path) -> dict[str, Any]:
    from grader.files import write_atomically

    report = _crashed_report(job, "the grading process died while grading this submission "
                                  "alone (did the submission kill it?)")
    write_atomically(out_dir / name, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return _row(job.entry, name, report)


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
    # the checks the course's interface left out: never run, so neither passed nor failed
    not_probed = {"not_probed": meta["not_probed"]} if meta.get("not_probed") else {}
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
        **({"parts": [_part_row(part) for part in report["parts"]]} if "parts" in report else {}),
        **not_probed,
    }


def _part_row(part: dict[str, Any]) -> dict[str, Any]:
    """A part of a multi-part report, as the class report counts it."""
    return {"assignment": part["assignment"], "status": part["status"],
            "score": part["score"], "max_score": part["max_score"],
            "misconceptions": [m["id"] for m in part["misconceptions"]],
            "errors": [e["kind"] for e in part["errors"]],
            "failed_checks": [c["id"] for c in part["checks"] if not c["passed"]]}


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
              progress: Progress | None = None, shard: Shard | None = None,
              chunk_size: int | None = None) -> BatchResult:
    """Grade ``entries`` (only ``shard``'s share of them, when given) into ``out_dir``.
    ``chunk_size``: submissions per Dask task (default ``DASK_CHUNK``)."""
    from grader.files import write_atomically

    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    # (named over the whole class: a shard's reports are named as in one unsharded batch)
    names = [report_name(e.student, taken) for e in entries]
    selected = [i for i, e in enumerate(entries) if shard is None or shard.holds(e.student)]
    rows: dict[int, dict[str, Any]] = {}
    todo: list[tuple[int, Job]] = []
    # every submission of the class is one no other submission may read
    private = dataclasses.replace(limits, private_paths=tuple(sorted(
        {str(path.resolve()) for entry in entries for path in entry.files})))
    for index in selected:
        entry = entries[index]
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
                         json.dumps(report, indent=2, ensure_ascii=False) + "\n", as_folder=True)
        rows[index] = row = _row(job.entry, names[index], report)
        if progress:
            progress.advance(f"{job.entry.student}: {row['score']:g}/{row['max_score']:g} "
                             f"{' '.join(row['misconceptions'] + row['errors'])}".rstrip())

    def recorded(index: int, job: Job, row: dict[str, Any], worker_peak: float) -> None:
        """A row whose report a Dask worker has written itself."""
        nonlocal peak
        peak = max(peak, worker_peak)
        rows[index] = row
        if progress:
            progress.advance(f"{job.entry.student}: {row['score']:g}/{row['max_score']:g} "
                             f"{' '.join(row['misconceptions'] + row['errors'])}".rstrip())

    if executor == "dask" and chunk_size == 1:
        from distributed import as_completed as dask_completed

        with dask_executor(scheduler or "") as submit:
            futures = {submit(job): (index, job) for index, job in todo}
            for future in dask_completed(list(futures)):
                index, job = futures[future]
                record(index, job, _collect(future, job))
    elif executor == "dask":
        run_dask_chunks([(index, names[index], job) for index, job in todo], out_dir,
                        scheduler or "", chunk_size or DASK_CHUNK, recorded)
    else:
        _run_locally(todo, jobs, record)
    ordered = [rows[i] for i in selected]
    write_summaries(ordered, out_dir, assignment)
    if shard is not None:
        write_shard_manifest(out_dir, shard, assignment, len(entries), selected)
    return BatchResult(ordered, len(todo), len(selected) - len(todo),
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


def _named_in_parts(row: dict[str, Any]) -> list[str]:
    """The row's misconceptions, each with its part in a multi-part report ("attention:mask-
    inverted")."""
    if not row.get("parts"):
        return list(row["misconceptions"])
    return [f"{part['assignment']}:{m}" for part in row["parts"] for m in part["misconceptions"]]


def write_summaries(rows: Sequence[dict[str, Any]], out_dir: Path, assignment: str) -> None:
    from grader.class_report import write_class_report
    from grader.files import write_atomically

    write_atomically(out_dir / "summary.json", json.dumps(list(rows), indent=2,
                                                          ensure_ascii=False) + "\n",
                     as_folder=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    # a multi-part assignment: a column of each part's score, between the total and the names
    parts: list[dict[str, Any]] = next((row["parts"] for row in rows if row.get("parts")), [])
    writer.writerow(["student", "submission", "status", "score", "max_score",
                     *(f"score {part['assignment']}" for part in parts), "misconceptions",
                     "errors", "report"])
    for row in rows:
        scores = [part["score"] for part in row.get("parts", [])] or [""] * len(parts)
        writer.writerow([spreadsheet_text(row["student"]), spreadsheet_text(row["submission"]),
                         row["status"], row["score"], row["max_score"], *scores,
                         " ".join(_named_in_parts(row)), " ".join(row["errors"]),
                         spreadsheet_text(row["report"])])
    write_atomically(out_dir / "summary.csv", buffer.getvalue(), as_folder=True)
    write_class_report(rows, out_dir, assignment)
