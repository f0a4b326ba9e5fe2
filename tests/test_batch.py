"""Class-scale grading: discovery of every input layout, isolation between submissions,
resumability, progress, the class report, and the same reports on a Dask cluster."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from grader.batch import Entry, Progress, discover, run_batch
from grader.config import DEFAULT_LIMITS
from grader.core.report import validate

from .conftest import SUBMISSIONS, run_cli

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

ATTENTION = SUBMISSIONS / "attention"
STARTER = Path(__file__).parents[1] / "assignments" / "attention" / "starter" / "attention.ipynb"


@pytest.fixture(autouse=True, scope="module")
def _grading_happens_here(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The CI runs this file in every mode, as the attack suite: where the grader refuses to
    run at all (no file system layer), there is no class to grade (that refusal is
    ``test_attacks``' to check)."""
    from grader import grade

    path = tmp_path_factory.mktemp("can-grade") / "attention.py"
    shutil.copy(ATTENTION / "correct_matmul.py", path)
    if [e["kind"] for e in grade(path, assignment="attention")["errors"]] == [
            "isolation-unavailable"]:
        pytest.skip("no file system layer here: the grader refuses to run")


def make_class(root: Path) -> Path:
    """Folders per student (with the starter notebook left beside the real work), a loose file,
    an empty folder, a crashing and a memory-hungry submission."""
    students = {
        "ada": "correct_matmul.py",
        "ben": "combo_dk_inverted.py",
        "cai": "mask_inverted.py",
        "dee": "scale_by_dk.py",
    }
    for name, fixture in students.items():
        folder = root / "class" / name
        folder.mkdir(parents=True)
        (folder / "attention.py").write_text((ATTENTION / fixture).read_text())
        shutil.copy(STARTER, folder / "attention.ipynb")
        (folder / ".git").mkdir()
        (folder / ".git" / "hook.py").write_text("raise SystemExit")
    (root / "class" / "eve").mkdir()
    (root / "class" / "fay.py").write_text(
        "import os\ndef scaled_dot_product_attention(Q, K, V, mask=None):\n    os._exit(3)\n")
    (root / "class" / "gus.py").write_text(
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return bytearray(8 * 1024 ** 3)\n")
    return root / "class"


def test_discover_each_layout(tmp_path: Path) -> None:
    folder = make_class(tmp_path)
    entries = {e.student: e for e in discover([str(folder)])}
    assert sorted(entries) == ["ada", "ben", "cai", "dee", "eve", "fay", "gus"]
    assert [f.name for f in entries["ada"].files] == ["attention.ipynb", "attention.py"]
    assert entries["eve"].files == ()
    globbed = discover([str(folder / "*.py")])
    assert [e.student for e in globbed] == ["fay", "gus"]

    export = tmp_path / "export"
    (export / "submission_101").mkdir(parents=True)
    (export / "submission_101" / "mine.py").write_text((ATTENTION / "no_scaling.py").read_text())
    (export / "submission_102").mkdir()
    (export / "submission_metadata.yml").write_text(
        "submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '7'\n"
        "    :email: ada@example.edu\n  :score: !ruby/object:BigDecimal 18:0.1e1\n"
        "submission_102:\n  :submitters:\n  - :name: Pair One\n  - :name: Pair Two\n")
    exported = discover([str(export)])
    assert [e.student for e in exported] == [
        "Ada Lovelace <ada@example.edu> (submission_101)", "Pair One; Pair Two (submission_102)"]
    assert exported[0].files[0].name == "mine.py" and exported[1].files == ()


def _reports(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(out.glob("*.json")):
        if path.name != "summary.json":
            report = json.loads(path.read_text())
            validate(report)
            found[report["metadata"]["student"]] = report
    return found


def test_batch_grades_a_class_and_resumes(tmp_path: Path) -> None:
    folder = make_class(tmp_path)
    out = tmp_path / "out"
    first = run_cli("batch", str(folder), "--assignment", "attention", "--out", str(out),
                    "--jobs", "2", "--timeout", "1")
    assert first.returncode == 0, first.stderr
    reports = _reports(out)
    assert reports["ada"]["score"] == 10  # the real work counts, not the stub beside it
    assert {m["id"] for m in reports["ben"]["misconceptions"]} == {"scale-by-dk", "mask-inverted"}
    assert reports["eve"]["errors"][0]["kind"] == "missing-function"
    assert reports["fay"]["errors"][0]["kind"] == "crashed" and reports["fay"]["score"] == 0
    assert reports["gus"]["score"] < 2 and "memory-limit" in {e["kind"] for e in
                                                              reports["gus"]["errors"]}
    summary = json.loads((out / "summary.json").read_text())
    assert [r["student"] for r in summary] == ["ada", "ben", "cai", "dee", "eve", "fay", "gus"]
    assert (out / "summary.csv").read_text().splitlines()[0].startswith("student,submission")
    markdown = (out / "summary.md").read_text()
    assert "`mask-inverted`" in markdown and "ben, cai" in markdown and "A-edge-6" in markdown

    again = run_cli("batch", str(folder), "--assignment", "attention", "--out", str(out),
                    "--timeout", "1")
    assert "graded 0, up to date 7" in again.stdout
    (folder / "dee" / "attention.py").write_text((ATTENTION / "correct_loops.py").read_text())
    changed = run_cli("batch", str(folder), "--assignment", "attention", "--out", str(out),
                      "--timeout", "1")
    assert "graded 1, up to date 6" in changed.stdout
    assert _reports(out)["dee"]["score"] == 10
    reseeded = run_cli("batch", str(folder), "--assignment", "attention", "--out", str(out),
                       "--timeout", "1", "--seed", "5")
    assert "graded 7, up to date 0" in reseeded.stdout
    relimited = run_cli("batch", str(folder), "--assignment", "attention", "--out", str(out),
                        "--seed", "5")
    assert "graded 7, up to date 0" in relimited.stdout  # new limits: a new grading


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value and "://" in value:
                self.external.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_class_report_is_self_contained_and_readable(tmp_path: Path) -> None:
    rows = [
        {"student": "ann", "status": "graded", "score": 10.0, "max_score": 10.0,
         "misconceptions": [], "errors": [], "failed_checks": []},
        {"student": "bob", "status": "graded", "score": 4.1, "max_score": 10.0,
         "misconceptions": ["scale-by-dk"], "errors": [], "failed_checks": ["values-2d"]},
        {"student": "cyd", "status": "graded", "score": 3.7, "max_score": 10.0,
         "misconceptions": ["scale-by-dk", "mask-inverted"], "errors": [],
         "failed_checks": ["values-2d", "values-masked"]},
        {"student": "dan", "status": "error", "score": 0.0, "max_score": 10.0,
         "misconceptions": [], "errors": ["syntax-error"], "failed_checks": []},
    ]
    from grader.class_report import class_statistics, write_class_report

    stats = class_statistics(rows, "attention")
    assert stats["misconceptions"][0]["id"] == "scale-by-dk"
    assert stats["misconceptions"][0]["students"] == ["bob", "cyd"]
    pass_rate = {c["id"]: c["pass_rate"] for c in stats["checks"]}
    assert pass_rate["values-2d"] == pytest.approx(1 / 3) and pass_rate["values-masked"] == (
        pytest.approx(2 / 3))
    assert stats["errors"] == {"syntax-error": 1} and stats["score_bins"][9] == 1
    write_class_report(rows, tmp_path, "attention")
    page = (tmp_path / "report.html").read_text()
    parser = _Collector()
    parser.feed(page)
    assert parser.external == [] and "script" not in parser.tags
    assert parser.tags.count("svg") == 4  # scores, misconceptions, checks, errors
    text = " ".join(parser.text)
    for needed in ("scale-by-dk", "bob, cyd", "B-11", "values-masked", "syntax-error"):
        assert needed in text


def _png_pixels(data: bytes) -> Any:
    """The pixels of an 8-bit RGB or RGBA PNG, not interlaced (what a browser's screenshot
    is), as an array (height, width, channels)."""
    import struct
    import zlib

    import numpy as np

    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    position, chunks = 8, []
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        chunks.append((kind, data[position + 8:position + 8 + length]))
        position += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert chunks[0][0] == b"IHDR" and depth == 8 and colour in (2, 6) and not interlace
    channels = 3 if colour == 2 else 4
    stride = width * channels
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    rows = np.frombuffer(raw, np.uint8).reshape(height, 1 + stride)
    pixels = np.zeros((height, stride), np.uint8)
    above = [0] * stride
    for y in range(height):  # undo each row's filter (PNG spec, section 9)
        kind, line = rows[y, 0], rows[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 1:  # Sub: a running sum along each channel
            row = (line.reshape(width, channels).astype(np.int64).cumsum(0) % 256).astype(
                np.uint8).reshape(-1)
        elif kind == 2:  # Up
            row = ((line.astype(np.int64) + above) % 256).astype(np.uint8)
        else:  # Average, Paeth: byte by byte
            done = [0] * stride
            values = line.tolist()
            for i in range(stride):
                a = done[i - channels] if i >= channels else 0
                b = above[i]
                if kind == 3:
                    guess = (a + b) // 2
                else:
                    c = above[i - channels] if i >= channels else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    guess = a if pa <= pb and pa <= pc else b if pb <= pc else c
                done[i] = (values[i] + guess) % 256
            row = np.array(done, np.uint8)
        pixels[y] = row
        above = row.astype(np.int64).tolist()
    return pixels.reshape(height, width, channels)


def test_class_report_renders_in_a_headless_browser(tmp_path: Path) -> None:
    """The page as a browser draws it: the window's size, the bar charts in their colour
    (a 360-pixel bar for the one score bin and the one misconception), and text."""
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no headless browser on this machine")
    rows = [{"student": "ann", "status": "graded", "score": 4.1, "max_score": 10.0,
             "misconceptions": ["scale-by-dk"], "errors": [], "failed_checks": ["values-2d"]}]
    from grader.class_report import write_class_report

    write_class_report(rows, tmp_path, "attention")
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
                    "--window-size=1000,1400", f"--screenshot={shot}",
                    (tmp_path / "report.html").as_uri()],
                   capture_output=True, timeout=90)
    pixels = _png_pixels(shot.read_bytes())
    assert pixels.shape[:2] == (1400, 1000)
    rgb = pixels[..., :3].astype(int)
    bars = (abs(rgb - (0x4C, 0x78, 0xA8)) <= 6).all(axis=-1).sum()  # the charts' fill
    assert bars >= 2 * 300 * 16, bars
    dark = (rgb < 96).all(axis=-1).sum()  # the headings and labels
    assert dark >= 500, dark


def test_progress_bar_on_a_terminal_and_lines_elsewhere() -> None:
    stream = io.StringIO()
    bar = Progress(2, stream, interactive=True)
    bar.advance("a")
    bar.advance("b")
    assert "2/2" in stream.getvalue() and "ETA" in stream.getvalue() and "\r" in stream.getvalue()
    plain = io.StringIO()
    lines = Progress(2, plain, interactive=False)
    lines.advance("ann: 10/10")
    assert plain.getvalue() == "[1/2] ann: 10/10\n"


def test_dask_executor_gives_identical_reports(tmp_path: Path) -> None:
    """(The dashboard on a free port: two runs on one machine must not both want 8787.)"""
    distributed = pytest.importorskip("distributed")
    entries = [Entry(p.stem, (p,)) for p in (ATTENTION / "correct_einsum_prescaled.py",
                                             ATTENTION / "combo_queries_zerofill.py",
                                             ATTENTION / "no_batch_support.py")]
    local = run_batch(entries, "attention", tmp_path / "local", jobs=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        remote = run_batch(entries, "attention", tmp_path / "dask", executor="dask",
                           scheduler=cluster.scheduler_address)
    assert local.rows and [r["score"] for r in local.rows] == [r["score"] for r in remote.rows]
    for name in (r["report"] for r in local.rows):
        mine, theirs = (json.loads((tmp_path / d / name).read_text()) for d in ("local", "dask"))
        for key in ("score", "misconceptions", "checks", "errors", "status"):
            assert mine[key] == theirs[key], key


def test_shipped_example_class_is_current(tmp_path: Path) -> None:
    example = Path(__file__).parents[1] / "assignments" / "attention" / "example_class"
    shipped = json.loads((example / "reports" / "summary.json").read_text())
    # (a copy in a private folder, as a class's submissions are: where the run's own uid is the
    # only layer, the grader refuses to grade submissions every user may read)
    submissions = tmp_path / "submissions"
    shutil.copytree(example / "submissions", submissions)
    result = run_batch(discover([str(submissions)]), "attention", tmp_path / "out", jobs=2)
    fields = ("student", "status", "score", "misconceptions", "errors")
    assert [{k: r[k] for k in fields} for r in result.rows] == [
        {k: r[k] for k in fields} for r in shipped]
    assert (example / "reports" / "report.html").is_file()


def test_a_submission_that_kills_its_worker_costs_only_itself(tmp_path: Path) -> None:
    """Running as the grader's user, a submission can kill the pool worker grading it, which
    breaks the whole pool; every other submission must still get its own, real report."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name, fixture in (("ann", "correct_matmul.py"), ("bob", "scale_by_dk.py"),
                          ("cyd", "mask_inverted.py"), ("dan", "correct_loops.py")):
        (folder / f"{name}.py").write_text((ATTENTION / fixture).read_text())
    (folder / "eve.py").write_text(
        "import os, signal\n"
        "def parent_of(pid):\n"
        "    return int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "os.kill(parent_of(os.getppid()), signal.SIGKILL)  # the pool worker above the server\n"
        + (ATTENTION / "correct_matmul.py").read_text())
    out = tmp_path / "out"
    done = run_cli("batch", str(folder), "--assignment", "attention", "--out", str(out),
                   "--jobs", "2")
    assert done.returncode == 0, done.stderr
    reports = _reports(out)
    assert reports["ann"]["score"] == reports["dan"]["score"] == 10
    assert [m["id"] for m in reports["bob"]["misconceptions"]] == ["scale-by-dk"]
    assert [m["id"] for m in reports["cyd"]["misconceptions"]] == ["mask-inverted"]
    # where seccomp refuses the signal, eve's own code fails instead: still only eve's problem
    assert reports["eve"]["score"] == 0 and reports["eve"]["errors"]


def test_a_worker_dying_mid_grading_costs_only_its_submission(tmp_path: Path) -> None:
    """The pool's recovery itself, whatever kills the worker (here the grading function is made
    to kill its own process for one student, in a process of its own); the dead worker's
    folders are removed all the same."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("ann", "bob", "cyd", "eve"):
        (folder / f"{name}.py").write_text((ATTENTION / "correct_matmul.py").read_text())
    script = textwrap.dedent(f"""\
        import json, os, signal
        from pathlib import Path
        import grader.batch as batch

        original = batch.grade_entry

        def grade_entry(job):
            if job.entry.student == "eve":
                os.kill(os.getpid(), signal.SIGKILL)
            return original(job)

        if __name__ == "__main__":
            batch.grade_entry = grade_entry
            result = batch.run_batch(batch.discover([{str(folder)!r}]), "attention",
                                     Path({str(tmp_path / "out")!r}), jobs=2)
            print(json.dumps({{r["student"]: [r["score"], r["errors"]] for r in result.rows}}))
        """)
    (tmp_path / "run.py").write_text(script)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    done = subprocess.run([sys.executable, str(tmp_path / "run.py")], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "TMPDIR": str(temporary)})
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout.splitlines()[-1])
    assert rows["ann"] == rows["bob"] == rows["cyd"] == [10.0, []]
    assert rows["eve"] == [0.0, ["crashed"]]
    assert list(temporary.iterdir()) == []


def test_student_names_are_shown_never_applied_in_class_outputs(tmp_path: Path) -> None:
    """Folder names are the students': no Markdown link or emphasis in summary.md, no formula
    in summary.csv, escaped in the HTML report."""
    import csv

    folder = tmp_path / "class"
    names = ["o_brien_[evil](x.y)_*bold*", "=1+2", "@SUM(A1)", "<b>x"]
    for name in names:
        (folder / name).mkdir(parents=True)
        shutil.copy(ATTENTION / "scale_by_dk.py", folder / name / "attention.py")
    out = tmp_path / "out"
    run_batch(discover([str(folder)]), "attention", out, jobs=1)
    summary = (out / "summary.md").read_text()
    assert "[evil](x.y)" not in summary and "_*bold*" not in summary
    assert "<b>" not in summary and "<b>" not in (out / "report.html").read_text()
    cells = [row[0] for row in csv.reader(io.StringIO((out / "summary.csv").read_text()))][1:]
    assert sorted(cells) == sorted(["'=1+2", "'@SUM(A1)", "<b>x",
                                    "o_brien_[evil](x.y)_*bold*"])


def test_a_batch_leaves_nothing_in_the_temporary_folder(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("ann", "bob", "cyd"):
        shutil.copy(ATTENTION / "correct_matmul.py", folder / f"{name}.py")
    result = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "-a",
                             "attention", "--out", str(tmp_path / "out"), "--jobs", "2"],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "TMPDIR": str(temporary)})
    assert result.returncode == 0, result.stderr
    assert list(temporary.iterdir()) == []


def test_slow_imports_are_seen_in_notebooks_whichever_way_a_cell_is_stored(
        tmp_path: Path) -> None:
    """A cell's source is a list of lines or one string (both are nbformat 4): in the second,
    each line after the first follows a "\\n" escape in the file. Either way the student who
    imports scipy is forked from the server that has it (else they pay its import alone)."""
    import json

    from grader.batch import slow_imports

    source = "import numpy as np\nfrom scipy.special import softmax\n"
    for name, stored in (("lines", source.splitlines(keepends=True)), ("string", source),
                         ("unrelated", "import numpy as np\nprint('no scipy here')\n")):
        notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None,
                               "outputs": [], "source": stored}],
                    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        path = tmp_path / f"{name}.ipynb"
        path.write_text(json.dumps(notebook, indent=1))
        assert slow_imports((path,)) == (() if name == "unrelated" else ("scipy.special",)), name


def test_a_slow_library_is_imported_once_by_a_server_forked_from_the_lean_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Students who import scipy are forked from a second server, which imported it once, so
    they do not pay for the import; it is a fork of the lean server (NumPy is not imported
    again); the lean server never loads scipy (it would make every other student's fork
    slower); the reports are the same either way. Each submission says what it found loaded
    before its own imports (read that way, it holds as an ordinary user too, whose servers'
    memory maps cannot be read). Grading a student of the lean server, whose run's leftovers
    the lean server's children are checked for, leaves the second server alone."""
    pytest.importorskip("scipy")
    from grader import sandbox
    from grader.batch import Job, grade_entry, slow_imports
    from grader.config import Limits
    from grader.sandbox import forkserver

    monkeypatch.setattr(forkserver, "_libraries", ())
    says = "import sys\nprint('scipy loaded before:', 'scipy.special' in sys.modules)\n"
    folders = {}
    for name, fixture in (("ada", "correct_logsumexp_tuple.py"), ("bea", "correct_matmul.py")):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        source = (SUBMISSIONS / "attention" / fixture).read_text()
        (folders[name] / "attention.py").write_text(says + source)
    ada, bea = (Job(Entry(name, (folders[name] / "attention.py",)), "attention", 0, Limits())
                for name in ("ada", "bea"))
    assert slow_imports(ada.entry.files) == ("scipy.special",)
    assert slow_imports(bea.entry.files) == ()

    def found_loaded(report: dict[str, Any]) -> bool:
        printed = report["metadata"].get("stdout", "")
        assert "scipy loaded before:" in printed, report
        return "scipy loaded before: True" in printed

    def parent(server: forkserver.ForkServer) -> int:
        return int(Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

    sandbox.use_fork_server(True)
    try:
        reports = [grade_entry(ada)]
        with_scipy = forkserver.current()
        assert with_scipy is not None
        reports.append(grade_entry(ada))
        assert forkserver.current() is with_scipy  # imported once, not restarted
        other = grade_entry(bea)
        lean = forkserver.current()
        assert lean is not None and lean is not with_scipy and not found_loaded(other)
        assert with_scipy.alive() and parent(with_scipy) == lean.process.pid
        reports.append(grade_entry(ada))
        assert forkserver.current() is with_scipy
        with_scipy.process.kill()  # a server that dies is replaced, by a fork of the lean one
        with_scipy.process.wait(5)
        reports.append(grade_entry(ada))
        again = forkserver.current()
        assert again is not with_scipy and parent(again) == lean.process.pid
        with_scipy.close()
        with_scipy.close()  # (at exit too: closing twice is harmless)
    finally:
        sandbox.use_fork_server(False)
    assert other["score"] == other["max_score"]
    assert {r["score"] for r in reports} == {reports[0]["max_score"]}
    assert all(found_loaded(report) for report in reports)


def test_the_grader_computes_with_one_blas_thread(tmp_path: Path) -> None:
    """After a grading, the OpenBLAS NumPy loaded in the grader's own process uses one thread:
    idle BLAS threads spin after each product and take CPU from the students' runs, and the
    reference's last bits then do not depend on how many cores the machine has."""
    import ctypes

    from grader import grade

    path = tmp_path / "attention.py"
    shutil.copy(ATTENTION / "correct_matmul.py", path)
    grade(path, assignment="attention")
    with open("/proc/self/maps") as maps:
        libraries = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    getters = [getattr(ctypes.CDLL(library), name, None) for library in libraries
               for name in ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
                            "openblas_get_num_threads64_")]
    getters = [getter for getter in getters if getter is not None]
    if not getters:
        pytest.skip("NumPy here is not built on OpenBLAS")
    assert {getter() for getter in getters} == {1}


def test_the_workers_fork_their_servers_from_one_started_before_them(tmp_path: Path) -> None:
    """Each pool worker's fork server is a fork of one server the batch started before the
    workers (which it forked from its own warmed-up process): no worker starts an interpreter
    that imports NumPy, or the course's framework, again. The students who import scipy are
    forked from each worker's second server, itself a fork of one shared server with scipy:
    a class imports scipy once, not once per worker. The reports are the usual ones."""
    pytest.importorskip("scipy")
    folder = tmp_path / "class"
    folder.mkdir()
    fixtures = {"bob": "scale_by_dk.py", "dan": "correct_logsumexp_tuple.py",
                "gus": "correct_logsumexp_tuple.py"}
    for name in ("ann", "bob", "cyd", "dan", "eve", "fay", "gus"):
        fixture = fixtures.get(name, "correct_matmul.py")
        (folder / f"{name}.py").write_text((ATTENTION / fixture).read_text())
    script = textwrap.dedent(f"""\
        import json, os
        from pathlib import Path
        import grader.batch as batch
        from grader.sandbox import forkserver

        original = batch.grade_entry

        def parent(pid):
            return int(Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[1])

        def grade_entry(job):
            report = original(job)
            server = forkserver.current()
            report["metadata"]["seen"] = [os.getpid(), parent(server.process.pid),
                                          forkserver._shared[False].server.process.pid,
                                          forkserver._shared[True].server.process.pid]
            return report

        if __name__ == "__main__":
            batch.grade_entry = grade_entry
            out = Path({str(tmp_path / "out")!r})
            result = batch.run_batch(batch.discover([{str(folder)!r}]), "attention", out,
                                     jobs=2)
            seen = [json.loads((out / row["report"]).read_text())["metadata"]["seen"]
                    for row in result.rows]
            print(json.dumps({{"main": os.getpid(), "seen": seen,
                              "scores": [row["score"] for row in result.rows]}}))
        """)
    (tmp_path / "run.py").write_text(script)
    done = subprocess.run([sys.executable, str(tmp_path / "run.py")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.splitlines()[-1])
    # (however the seven are shared out among the workers: that depends on the machine's load)
    shared = {(lean, with_scipy) for _, _, lean, with_scipy in ran["seen"]}
    assert len(shared) == 1 and ran["main"] not in shared.pop()
    lean, with_scipy = ran["seen"][0][2:]
    assert [server_parent for _, server_parent, _, _ in ran["seen"]] == [
        with_scipy if name in ("dan", "gus") else lean
        for name in ("ann", "bob", "cyd", "dan", "eve", "fay", "gus")]
    assert [score == 10.0 for score in ran["scores"]] == [True, False, True, True, True, True,
                                                          True]


def test_an_answer_left_on_a_shared_server_is_never_taken_for_another(tmp_path: Path) -> None:
    """Workers take turns on the shared server's socket: a worker that died after asking for a
    server, before reading the answer, leaves that answer there; the next worker must get the
    server forked for it, not that one (whose control socket is gone, so it ends)."""
    import socket

    from grader.sandbox.forkserver import ForkServer

    shared = ForkServer(())
    try:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = {"op": "server", "names": [], "id": "the-dead-worker's"}
        socket.send_fds(shared.socket, [json.dumps(request).encode()], [theirs.fileno()])
        theirs.close()
        forked = ForkServer((), fork_of=shared)
        ours.close()  # (the dead worker's end: its server ends)
        with pytest.raises(subprocess.TimeoutExpired):
            forked.process.wait(timeout=0.5)
        assert forked.alive()
        forked.close()
    finally:
        shared.close()


def _small_class(root: Path, size: int) -> Path:
    fixtures = ["correct_matmul.py", "scale_by_dk.py", "mask_inverted.py",
                "combo_dk_inverted.py", "no_batch_support.py"]
    folder = root / "class"
    folder.mkdir(parents=True)
    for n in range(size):
        (folder / f"s{n:02d}.py").write_text((ATTENTION / fixtures[n % len(fixtures)]).read_text())
    return folder


def test_a_sharded_class_merges_into_the_summary_of_one_batch(tmp_path: Path) -> None:
    from grader.batch import Shard, merge_shards

    entries = discover([str(_small_class(tmp_path, 9))])
    whole = run_batch(entries, "attention", tmp_path / "whole", jobs=2)
    graded = 0
    for k in (1, 2, 3):
        graded += run_batch(entries, "attention", tmp_path / f"shard-{k}", jobs=2,
                            shard=Shard(k, 3)).graded
    assert graded == len(entries) == 9
    merge_shards([tmp_path / f"shard-{k}" for k in (1, 2, 3)], tmp_path / "merged")

    def timeless(folder: str) -> list[dict[str, Any]]:
        rows = json.loads((tmp_path / folder / "summary.json").read_text())
        return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]

    assert timeless("merged") == timeless("whole") and len(whole.rows) == 9
    assert (tmp_path / "merged" / "summary.csv").read_text() == (
        tmp_path / "whole" / "summary.csv").read_text()
    # graded again from the same reports (all up to date), the shards' merge is the very folder
    for k in (1, 2, 3):
        for row in json.loads((tmp_path / f"shard-{k}" / "summary.json").read_text()):
            shutil.copy(tmp_path / "whole" / row["report"], tmp_path / f"shard-{k}")
        again = run_batch(entries, "attention", tmp_path / f"shard-{k}", shard=Shard(k, 3))
        assert again.graded == 0
    merge_shards([tmp_path / f"shard-{k}" for k in (1, 2, 3)], tmp_path / "merged")
    for name in ("summary.json", "summary.csv", "summary.md", "report.html"):
        assert (tmp_path / "merged" / name).read_bytes() == (
            tmp_path / "whole" / name).read_bytes(), name


def test_a_shard_killed_midway_regrades_only_what_is_missing(tmp_path: Path) -> None:
    import signal
    import time

    folder = _small_class(tmp_path, 12)
    out = tmp_path / "shard"
    command = [sys.executable, "-m", "grader", "batch", str(folder), "-a", "attention",
               "--out", str(out), "--jobs", "1", "--shard", "1/1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob("s*.json"))) < 3:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the pod is evicted: the whole process group
    process.wait()
    kept = {p.name for p in out.glob("s*.json")}
    assert 3 <= len(kept) < 12 and not (out / "summary.json").exists()
    for name in kept:  # every report written is whole (written atomically)
        validate(json.loads((out / name).read_text()))
    again = run_cli("batch", str(folder), "-a", "attention", "--out", str(out), "--shard", "1/1")
    assert again.returncode == 0, again.stderr
    assert f"graded {12 - len(kept)}, up to date {len(kept)}" in again.stdout


def test_dask_chunks_grade_as_one_task_each_and_a_retried_chunk_skips_what_is_done(
        tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from grader.batch import _grade_chunk

    entries = discover([str(_small_class(tmp_path, 5))])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        single = run_batch(entries, "attention", tmp_path / "single", executor="dask",
                           scheduler=cluster.scheduler_address, chunk_size=1)
        chunked = run_batch(entries, "attention", tmp_path / "chunked", executor="dask",
                            scheduler=cluster.scheduler_address, chunk_size=2)
    assert [r["score"] for r in single.rows] == [r["score"] for r in chunked.rows]
    assert chunked.graded == 5 and chunked.worker_peak_rss_mb > 0
    for row in single.rows:
        mine, theirs = (json.loads((tmp_path / d / row["report"]).read_text())
                        for d in ("single", "chunked"))
        for key in ("score", "misconceptions", "checks", "errors", "status"):
            assert mine[key] == theirs[key], key
    # a chunk retried after its worker died: the reports it had written are not graded again
    first = json.loads((tmp_path / "chunked" / single.rows[0]["report"]).read_text())
    key = first["metadata"]["batch_key"]
    from grader.batch import Job

    job = Job(entries[0], "attention", 0, DEFAULT_LIMITS, key)
    [(row, _)] = _grade_chunk([(single.rows[0]["report"], job)], str(tmp_path / "chunked"))
    assert row["seconds"] == first["metadata"]["duration_seconds"]  # read back, not regraded


# --- the class report, for a course -----------------------------------------------------------

def _example_report(student: str) -> dict[str, Any]:
    reports = Path(__file__).parents[1] / "assignments" / "attention" / "example_class" / "reports"
    return json.loads((reports / f"{student}.json").read_text())


def test_the_class_report_shows_checks_left_out_as_not_run(tmp_path: Path) -> None:
    """A check the course's interface left out (``metadata.not_probed``) was shown passed by
    every student, at 100%."""
    from grader.batch import _row, write_summaries

    rows = []
    for student in ("amara", "bruno"):
        report = _example_report(student)
        report["checks"] = [c for c in report["checks"] if c["id"] != "values-masked"]
        report["metadata"]["not_probed"] = [
            {"check": "values-masked", "why": "your interface takes valid lengths"}]
        rows.append(_row(Entry(student, ()), f"{student}.json", report))
    write_summaries(rows, tmp_path, "attention")
    summary = (tmp_path / "summary.md").read_text()
    assert "| `values-masked` | reference | not run |" in summary
    assert "your interface takes valid lengths" in summary
    page = (tmp_path / "report.html").read_text()
    assert "values-masked" in page.split("Not run")[1]
    assert "| `returns-arrays` | interface | 100% |" in summary


def test_the_class_report_speaks_the_courses_conventions(tmp_path: Path) -> None:
    """In a True-blocks course, the class report said "True means may attend" (the contract's
    wording) and showed the explanation's code spans as literal backticks."""
    from grader.class_report import class_statistics, html, markdown
    from reference.catalogue import BY_ID, wording

    row = {"student": "ann", "submission": "a.py", "report": "ann.json", "status": "graded",
           "score": 5.0, "max_score": 10.0, "misconceptions": ["mask-inverted", "no-scaling"],
           "errors": [], "failed_checks": [], "seconds": 0.1}
    stats = class_statistics([row], "pytorch-mha-convention")
    told = wording("mask-inverted", frozenset({"mask:block"}))
    item = next(m for m in stats["misconceptions"] if m["id"] == "mask-inverted")
    assert item["explanation"] == told.explanation != BY_ID["mask-inverted"].explanation
    assert item["title"] == told.title
    spans = BY_ID["no-scaling"].explanation  # (an explanation with code spans)
    assert "`" in spans
    page = html(stats)
    assert "`" not in page.split("<h2>Misconceptions</h2>")[1] and "<code>" in page
    assert spans.split("`")[0].strip() in markdown(stats)
    assert told.explanation[:60] in markdown(stats)


def test_reports_take_the_permissions_of_their_folder(tmp_path: Path) -> None:
    """Reports were written -rw------- whatever the folder, so a TA in the course's group could
    not read them: each file takes the folder's group and its owner's and group's permissions
    (without execute bits), never every user's (reports hold the hidden probes' values)."""
    import grp

    out = tmp_path / "reports"
    out.mkdir()
    out.chmod(0o750)
    groups = [g.gr_gid for g in grp.getgrall() if g.gr_gid != os.getegid()]
    group = groups[0] if groups and os.geteuid() == 0 else os.getegid()
    os.chown(out, -1, group)
    submission = tmp_path / "class" / "ann.py"
    submission.parent.mkdir()
    submission.parent.chmod(0o700)
    shutil.copy(ATTENTION / "correct_matmul.py", submission)
    run_batch(discover([str(submission.parent)]), "attention", out, jobs=1)
    written = sorted(out.iterdir())
    assert {p.name for p in written} >= {"ann.json", "summary.csv", "summary.md", "report.html"}
    for path in written:
        assert (path.stat().st_mode & 0o777, path.stat().st_gid) == (0o640, group), path.name
    out.chmod(0o775)
    run_batch(discover([str(submission.parent)]), "attention", out, jobs=1, resume=False)
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {0o660}


def _descendants(root: int) -> set[int]:
    """The processes below ``root`` now (a batch this test started), however deep."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(name))
    found: set[int] = set()
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in found:
                found.add(child)
                waiting.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def test_a_batch_killed_with_sigkill_leaves_no_process_and_its_folder_goes_next_time(
        tmp_path: Path) -> None:
    """``kill -9`` of a batch while its students run: its pool workers, their fork servers and
    the runs die with it; its scratch folder is removed when the next batch starts."""
    import signal
    import time

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("ann", "bob"):
        (folder / f"{name}.py").write_text(
            "import time\ntime.sleep(50)\n" + (ATTENTION / "correct_matmul.py").read_text())
    env = {**os.environ, "TMPDIR": str(temporary)}
    batch = subprocess.Popen([sys.executable, "-m", "grader", "batch", str(folder), "-a",
                              "attention", "--out", str(tmp_path / "out"), "--jobs", "2"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        # the students are running once the batch's tree stops growing (workers, their
        # servers, the runs): looked at until it has been the same for three seconds, once it
        # has two workers and a server at least (a loaded machine may take longer than three
        # seconds to start the batch at all)
        seen: set[int] = set()
        steady_since = time.monotonic()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (len(seen) < 3
                                               or time.monotonic() - steady_since < 3):
            now = _descendants(batch.pid)
            if now - seen:
                steady_since = time.monotonic()
            seen |= now
            time.sleep(0.1)
        assert len(seen) >= 3, seen  # (two workers and a server at least)
        assert [p.name for p in temporary.iterdir()]  # its scratch folder
    finally:
        batch.send_signal(signal.SIGKILL)
        batch.wait()
    deadline = time.monotonic() + 30
    while [p for p in seen if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in seen if _alive(p)]
    for pid in left:  # (the test's own: they must not outlive it either)
        os.kill(pid, signal.SIGKILL)
    assert left == []
    # the next batch removes the dead batch's folder as it starts (and its own as it ends)
    again = tmp_path / "again"
    again.mkdir()
    shutil.copy(ATTENTION / "correct_matmul.py", again / "cyd.py")
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(again), "-a",
                           "attention", "--out", str(tmp_path / "out2")], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert list(temporary.iterdir()) == []
