"""What starting a worker (``grader/sandbox/spawn.py``) promises: a fresh interpreter in a
session of its own, in the run's folder, with exactly the scrubbed environment, nothing of this
process's but its two pipes; a head start taken once or discarded without a trace; a run's
folder private, kept for the next run only when no run wrote in it."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.sandbox import spawn
from grader.sandbox.processes import MARKER_VARIABLE, child_environment

pytestmark = pytest.mark.e2e  # starts interpreters: the slow tier


@pytest.fixture(autouse=True)
def no_spare_or_head_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's folders and workers only (the process's own are put back afterwards)."""
    monkeypatch.setattr(spawn, "_spare_base", None)
    monkeypatch.setattr(spawn, "_head_start", None)


@pytest.fixture
def base() -> Iterator[Path]:
    made = spawn.new_base()
    yield made
    spawn.done_with_base(made, untouched=False)


def environment_of(pid: int) -> dict[str, str]:
    """(Empty for a moment after ``Popen`` returns: the kernel closes the pipe it waits on
    before it lays out the new program's environment.)"""
    deadline = time.monotonic() + 5
    while not (raw := Path(f"/proc/{pid}/environ").read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if entry)


def alive(pid: int) -> bool:
    """Is ``pid`` (a worker this test started) still running (a zombie is not)?"""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_worker_starts_fresh_in_its_folder_with_the_scrubbed_environment(
        base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    monkeypatch.setenv("ATTENTION_GRADER_SEED", "1234")
    worker = spawn.spawn_worker(base / "work")
    try:
        pid = worker.process.pid
        assert environment_of(pid) == child_environment(str(base / "work"), worker.marker)
        assert environment_of(pid)[MARKER_VARIABLE] == worker.marker
        assert os.readlink(f"/proc/{pid}/cwd") == str(base / "work")
        assert os.getsid(pid) == pid and os.getsid(pid) != os.getsid(0)
        assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
        assert os.readlink(f"/proc/{pid}/fd/1") == os.readlink(f"/proc/{pid}/fd/2")
        assert "memfd:" in os.readlink(f"/proc/{pid}/fd/1")
        assert worker.process.args[1:3] == ["-I", "-B"]
    finally:
        spawn._discard(base, worker)
    assert worker.process.returncode is not None and not alive(pid)


def test_what_a_worker_prints_is_read_back(base: Path) -> None:
    output = spawn.output_file()
    try:
        os.write(output, b"hello " * 1000)
        assert spawn.printed(output, 11) == b"hello hello"
    finally:
        os.close(output)


def test_a_head_start_is_taken_once(monkeypatch: pytest.MonkeyPatch) -> None:
    spawn.head_start()
    started = spawn._head_start
    assert started is not None
    base, worker = spawn.take_head_start()
    try:
        assert (base, worker) == started and worker is not None
        assert worker.process.poll() is None
        again, none = spawn.take_head_start()
        assert none is None and again != base
        spawn.done_with_base(again, untouched=False)
    finally:
        assert worker is not None
        spawn._discard(base, worker)


def test_a_head_start_not_wanted_is_discarded_without_a_trace() -> None:
    spawn.head_start()
    assert spawn._head_start is not None
    started_base, started = spawn._head_start
    base, none = spawn.take_head_start(reusable=False)
    try:
        assert none is None and base != started_base
        assert started.process.returncode is not None and not alive(started.process.pid)
        assert not started_base.exists()
        with pytest.raises(OSError):
            os.fstat(started.request_write)
    finally:
        spawn.done_with_base(base, untouched=False)


def test_a_runs_folder_is_private(base: Path) -> None:
    assert stat.S_IMODE(base.stat().st_mode) == 0o711  # reached by its path, not listed
    for folder in ("work", "root"):
        assert stat.S_IMODE((base / folder).stat().st_mode) == 0o700


def test_an_untouched_folder_is_kept_for_the_next_run_a_touched_one_removed() -> None:
    first = spawn.new_base()
    spawn.done_with_base(first, untouched=True)
    assert first.is_dir()
    second = spawn.new_base()
    assert second == first
    (second / "work" / "written.txt").write_text("by the run")
    spawn.done_with_base(second, untouched=False)
    assert not second.exists()
    third = spawn.new_base()
    try:
        assert third != first
    finally:
        spawn.done_with_base(third, untouched=False)


def test_a_worker_that_is_told_nothing_waits(base: Path) -> None:
    """No student code runs before the setup frame: the worker only waits for it."""
    worker = spawn.spawn_worker(base / "work")
    try:
        time.sleep(0.5)
        assert worker.process.poll() is None
        assert spawn.printed(worker.output, 100) == b""
    finally:
        spawn._discard(base, worker)
