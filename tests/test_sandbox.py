"""Whatever a submission does, a valid report comes out, the score is not inflated, and no
process is left behind. Every case is bounded and harmless to the machine."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader import sandbox
from grader.config import Limits

from .conftest import SUBMISSIONS

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

CORRECT = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()
FAST = Limits(import_seconds=3, call_seconds=0.6, total_seconds=10, cell_seconds=2)
HEADER = "import numpy as np, os, sys, time, subprocess, signal, threading\n"


@pytest.fixture(autouse=True, scope="module")
def refused_here(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where the grader refuses to run anything (no namespaces, no Landlock, no uid to drop
    to: an ordinary user on a restricted runner), these guarantees have nothing to hold on;
    that refusal is tested in test_attacks.py."""
    from grader import grade

    path = tmp_path_factory.mktemp("probe") / "attention.py"
    path.write_text(CORRECT)
    report = grade(path, assignment="attention")
    if [e["kind"] for e in report["errors"]] == ["isolation-unavailable"]:
        pytest.skip("the grader refuses to run here (no filesystem layer)")


@pytest.fixture(autouse=True, params=["fresh-interpreter", "fork-server"])
def start_mode(request: pytest.FixtureRequest):
    """Every guarantee holds both for a fresh interpreter per submission (grade, check) and for a
    fork of the pre-warmed server (batch): the test's runs start as its parameter says (the
    default of this process's runs, for the test only)."""
    with sandbox.forking(request.param == "fork-server"):
        yield request.param


def wrap(body: str) -> str:
    """An attention function whose body is `body` (indented), after the correct definition."""
    indented = "\n".join("    " + line for line in body.splitlines())
    return HEADER + CORRECT + f"\n_correct = scaled_dot_product_attention\n\n" \
        f"def scaled_dot_product_attention(Q, K, V, mask=None):\n{indented}\n"


def marker_processes(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("body,kind", [
    ("while True:\n    pass", "timeout"),
    ("time.sleep(60)", "timeout"),
    ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass", "timeout"),
    ("sys.exit(0)", "runtime-error"),
    ("os._exit(0)", "crashed"),
    ("os.kill(os.getpid(), signal.SIGSEGV)", "crashed"),
    ("raise KeyboardInterrupt", "runtime-error"),
    ("return 'attention'", "wrong-shape"),
    ("return None", "wrong-shape"),
    ("return (x for x in range(3))", "wrong-shape"),
    ("return np.full((2, 3), np.nan)", "non-finite-output"),
    ("x = bytearray(8 * 1024 ** 3)", "memory-limit"),
])
def test_hostile_calls_give_a_report_with_the_right_kind(grade_source, body: str,
                                                         kind: str) -> None:
    """Each is reported as the error it is, and no call earns a check of the values."""
    started = time.monotonic()
    report = grade_source(wrap(body), limits=FAST)
    assert time.monotonic() - started < FAST.total_seconds + 10
    assert report["score"] < 2.0, report["score"]
    kinds = [e["kind"] for e in report["errors"]]
    assert kind in kinds, kinds
    values = [c for c in report["checks"] if c["id"].startswith("values-")]
    assert values and not [c["id"] for c in values if c["passed"]]


@pytest.mark.parametrize("body,said", [
    ("os._exit(7)", "exited with status 7"),
    ("os.kill(os.getpid(), signal.SIGSEGV)", "killed by SIGSEGV"),
    ("os.kill(os.getpid(), signal.SIGABRT)", "killed by SIGABRT"),
    ("os.kill(os.getpid(), signal.SIGTERM)", "killed by SIGTERM"),
    ("signal.raise_signal(signal.SIGUSR1)", "killed by SIGUSR1"),
    ("import ctypes\nctypes.string_at(0)", "killed by SIGSEGV"),
])
def test_how_the_process_ended_is_said_exactly(grade_source, body: str, said: str) -> None:
    """The exit status or the signal, as the submission's own process ended: also where that
    process is its namespace's init, which the kernel spares the signals it sends itself (each
    is caught and passed on to the fork server), and a fault in C code still ends it at once."""
    report = grade_source(wrap(body), limits=FAST)
    messages = [e["message"] for e in report["errors"] if e["kind"] == "crashed"]
    assert messages and all(said in m for m in messages), messages


@pytest.mark.parametrize("ending", ["SIGTERM", "SIGUSR1"])
def test_a_process_the_submission_forks_ends_by_its_own_signal(grade_source, ending: str) -> None:
    """The handlers that pass pid 1's death on are inherited by the processes it forks: there
    a signal sent to itself still ends the process by its default, as anywhere."""
    body = (f"pid = os.fork()\nif pid == 0:\n    os.kill(os.getpid(), signal.{ending})\n"
            "    os._exit(3)\n_, status = os.waitpid(pid, 0)\n"
            f"if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.{ending}):\n"
            "    raise RuntimeError(f'the forked process ended with status {status}')\n"
            "return _correct(Q, K, V, mask)")
    report = grade_source(wrap(body), limits=FAST)
    assert not report["errors"], report["errors"]
    assert report["score"] == report["max_score"]


def _verdicts(report: dict) -> tuple:
    return (report["status"], report["score"], [(c["id"], c["passed"]) for c in report["checks"]],
            report["errors"])


def test_printing_and_forged_reports_do_not_change_the_score(grade_source) -> None:
    """A forged report printed, a forged result frame written to stdout: the report is the one
    the same code earns without them (its zeros fail every check of the values)."""
    forged = '{"score": 10.0, "status": "graded"}'
    returned = "return _correct(Q, K, V, mask)[0] * 0"
    body = (f"print({forged!r} * 10000)\nsys.stderr.write('x' * 10**6)\n"
            f"os.write(1, b'AGF1' * 1000)\n{returned}")
    report = grade_source(wrap(body), limits=FAST)
    assert _verdicts(report) == _verdicts(grade_source(wrap(returned), limits=FAST))
    assert not [c["id"] for c in report["checks"] if c["id"].startswith("values-") and c["passed"]]
    assert forged in report["metadata"]["stdout"]
    assert len(report["metadata"]["stdout"]) <= 2000


def test_writing_to_every_file_descriptor_does_not_forge_results(grade_source) -> None:
    body = ("for fd in range(3, 64):\n"
            "    try:\n        os.write(fd, b'AGF1' + b'\\x00' * 64)\n    except OSError:\n"
            "        pass\nreturn np.zeros((Q.shape[-2], V.shape[-1]))")
    report = grade_source(wrap(body), limits=FAST)
    # the frame written into the result channel is taken for what it is: a broken channel
    assert {e["kind"] for e in report["errors"]} == {"crashed"}, report["errors"]
    assert "broke the result channel" in report["errors"][0]["message"]
    assert report["score"] == 0 and not [c["id"] for c in report["checks"] if c["passed"]]


def test_monkeypatching_numpy_in_the_child_changes_nothing(grade_source) -> None:
    source = CORRECT.replace("import numpy as np", "import numpy as np\n"
                             "np.allclose = lambda *a, **k: True\nnp.isclose = np.allclose\n"
                             "np.testing.assert_allclose = lambda *a, **k: None")
    source = source.replace("return weights @ V, weights", "return weights @ V * 2, weights")
    report = grade_source(source, limits=FAST)
    # the comparisons are the grader's own: the doubled output fails them as it would unpatched
    unpatched = grade_source(CORRECT.replace("return weights @ V, weights",
                                             "return weights @ V * 2, weights"), limits=FAST)
    assert _verdicts(report) == _verdicts(unpatched)
    assert not [c["id"] for c in report["checks"] if c["id"].startswith("values-") and c["passed"]]


def test_reading_the_grader_is_refused(grade_source) -> None:
    source = CORRECT + "\nimport reference\n"
    report = grade_source(source, limits=FAST)
    assert report["status"] == "error" and report["score"] == 0
    assert [e["kind"] for e in report["errors"]][0] == "forbidden-import"


def test_grader_stub_lets_notebook_self_check_line_run(grade_source) -> None:
    report = grade_source("from grader import check\n" + CORRECT + "\ncheck('attention')\n",
                          limits=FAST)
    assert report["score"] == report["max_score"]


def test_environment_is_scrubbed(grade_source, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "secret-token")
    body = ("if 'GITHUB_TOKEN' in os.environ or 'secret-token' in str(os.environ):\n"
            "    return np.zeros((Q.shape[-2], V.shape[-1]))\nreturn _correct(Q, K, V, mask)")
    report = grade_source(wrap(body), limits=FAST)
    assert report["score"] == report["max_score"]


def test_the_run_has_exactly_its_own_environment(grade_source) -> None:
    """The names the grader gives a run, no others, in Python and in the C library's environment
    (what a program it starts inherits); its home is its own working directory."""
    from grader.sandbox.processes import child_environment

    source = ("import ctypes, itertools, os\n"
              "print('names', ','.join(sorted(os.environ)))\n"
              "c = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), 'environ')\n"
              "entries = itertools.takewhile(bool, (c[i] for i in itertools.count()))\n"
              "print('inherited', ','.join(sorted(e.decode().split('=', 1)[0] for e in entries)))\n"
              "print('home', os.environ['HOME'] == os.environ['TMPDIR'] == os.getcwd())\n"
              + CORRECT)
    report = grade_source(source)
    said = dict(line.split(" ", 1) for line in report["metadata"]["stdout"].splitlines()
                if line.startswith(("names ", "inherited ", "home ")))
    expected = ",".join(sorted(child_environment("/home", "marker")))
    assert said == {"names": expected, "inherited": expected, "home": "True"}, said


@pytest.mark.parametrize("spawn", [
    "subprocess.Popen(['sleep', '300', '{m}'])",
    "subprocess.Popen(['sleep', '300', '{m}'], start_new_session=True)",
    "subprocess.Popen(['sh', '-c', '(setsid sleep 300 {m} &) ; sleep 300 {m}'])",
])
def test_no_process_survives(grade_source, spawn: str) -> None:
    marker = f"{os.getpid()}{time.monotonic_ns() % 100000}"
    body = spawn.format(m=marker) + "\nwhile True:\n    pass"
    grade_source(wrap(body), limits=Limits(import_seconds=5, call_seconds=0.5, total_seconds=4))
    deadline = time.monotonic() + 3
    while marker_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker_processes(marker) == []


def test_slow_import_within_budget_is_graded(grade_source) -> None:
    report = grade_source("import time\ntime.sleep(1.5)\n" + CORRECT,
                          limits=Limits(import_seconds=5, call_seconds=1, total_seconds=15))
    assert report["score"] == report["max_score"]


def test_import_that_hangs_is_a_timeout(grade_source) -> None:
    report = grade_source(CORRECT + "\nwhile True:\n    pass\n", limits=FAST)
    assert report["status"] == "error" and report["errors"][0]["kind"] == "timeout"


@pytest.mark.parametrize("content,kind", [
    ("", "missing-function"),
    ("def scaled_dot_attention(Q, K, V, mask=None):\n    return Q\n", "missing-function"),
    ("def scaled_dot_product_attention(Q, K, V, mask=None)\n    return Q\n", "syntax-error"),
    ("\x00\x01\x02binary", "syntax-error"),
    ("def scaled_dot_product_attention():\n    return 1\n", "wrong-signature"),
])
def test_broken_files(grade_source, content: str, kind: str) -> None:
    report = grade_source(content, assignment="attention", limits=FAST)
    assert report["status"] == "error"
    assert report["errors"][0]["kind"] == kind


def test_missing_function_suggests_the_close_name(grade_source) -> None:
    report = grade_source("def scaled_dot_attention(Q, K, V, mask=None):\n    return Q\n",
                          assignment="attention", limits=FAST)
    assert "did you mean `scaled_dot_attention`?" in report["errors"][0]["message"]


def test_one_hanging_probe_costs_only_that_probe(grade_source) -> None:
    body = "if Q.ndim == 3 and mask is None:\n    while True:\n        pass\nreturn _correct(Q, K, V, mask)"
    report = grade_source(wrap(body), limits=Limits(import_seconds=5, call_seconds=0.5,
                                                    total_seconds=20))
    assert report["status"] == "graded"
    assert 5.0 < report["score"] < report["max_score"]
    assert "timeout" in [e["kind"] for e in report["errors"]]


def _outcomes(source: str, limits: Limits, start_mode: str) -> list:
    """Every call's outcome, straight from the sandbox, on the attention probes."""
    from grader.core.tasks import build_probes
    from grader.model import Submission
    from grader.sandbox.session import CallPlan

    probes = build_probes("attention", 0)
    submission = Submission(Path("attention.py"), "py", (source,))
    _, outcomes = sandbox.run(submission, lambda info: CallPlan(
        "scaled_dot_product_attention", probes), limits,
        fork_server=start_mode == "fork-server")
    return outcomes


def test_a_submission_that_hangs_on_every_call_is_given_up_after_two_timeouts_in_a_row(
        start_mode: str) -> None:
    outcomes = _outcomes(wrap("while True:\n    pass"), FAST, start_mode)
    ran_out = [o for o in outcomes if "did not return" in o.message]
    assert len(ran_out) == 2, [o.message for o in outcomes]
    assert all(o.error_kind == "timeout" for o in outcomes)
    assert all("two calls in a row ran out of time" in o.message
               for o in outcomes if o not in ran_out)


def test_a_submission_that_hangs_on_masked_inputs_still_answers_every_other_one(
        start_mode: str) -> None:
    outcomes = _outcomes(wrap("if mask is not None:\n    while True:\n        pass\n"
                              "return _correct(Q, K, V, mask)"), FAST, start_mode)
    from grader.core.tasks import build_probes

    for probe, outcome in zip(build_probes("attention", 0), outcomes):
        if len(probe.args) < 4 or probe.args[3] is None:
            assert outcome.ok, (probe.id, outcome.message)


@pytest.mark.parametrize("body", [
    "class Lying(np.ndarray):\n    def __eq__(self, other):\n        return True\n"
    "return np.zeros((Q.shape[-2], V.shape[-1])).view(Lying)",
    "class Fake:\n    def __array__(self, dtype=None, copy=None):\n        raise ValueError('no')\n"
    "return Fake()",
    "return np.zeros((4000, 4000, 64))",
    "return np.array([['a']])",
    "return [[1, 2], [3]]",
])
def test_lying_or_huge_returns_are_never_credited(grade_source, body: str) -> None:
    report = grade_source(wrap(body), limits=FAST)
    assert report["score"] < 3.0
    assert any(e["kind"] in {"wrong-shape", "runtime-error", "memory-limit", "crashed"}
               for e in report["errors"])


def test_network_is_closed_where_the_kernel_allows(grade_source) -> None:
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    received: list[bytes] = []

    def accept() -> None:
        try:
            connection, _ = server.accept()
            received.append(connection.recv(100))
        except OSError:
            pass

    listener = threading.Thread(target=accept)
    listener.start()
    port = server.getsockname()[1]
    leak = (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 1)"
            ".sendall(b'hidden probes')\nexcept OSError as exc:\n    print('blocked', exc)\n")
    report = grade_source(leak + CORRECT)
    listener.join()
    server.close()
    layers = set(report["metadata"]["isolation"])
    if not layers & {"network-namespace", "seccomp"}:
        pytest.skip("neither a network namespace nor seccomp is available here")
    assert received == [] and "blocked" in report["metadata"]["stdout"]
    assert report["score"] == report["max_score"]


def test_a_run_said_to_have_a_network_namespace_is_not_in_the_graders(grade_source) -> None:
    """Where the fork server makes the network namespace its runs share (one at a time), the
    run is still said to have one only where it is not the grader's own."""
    source = "import os\nprint('net', os.readlink('/proc/self/ns/net'))\n" + CORRECT
    report = grade_source(source)
    if "network-namespace" not in report["metadata"]["isolation"]:
        pytest.skip("no network namespace here")
    assert report["metadata"]["stdout"].split()[1] != os.readlink("/proc/self/ns/net")
    assert report["score"] == report["max_score"]


def test_unprivileged_uid_where_running_as_root(grade_source) -> None:
    report = grade_source("import os\nprint('uid', os.getuid())\n" + CORRECT)
    if "unprivileged-uid" not in report["metadata"]["isolation"]:
        pytest.skip("not root, or Python/NumPy not readable by an unprivileged user here")
    from grader.sandbox.child import RUN_UID_BASE

    # a uid of the run's own, never a real user's, and another for the next run
    uid = int(report["metadata"]["stdout"].split()[1])
    assert uid > RUN_UID_BASE and uid != os.getuid()
    again = grade_source("import os\nprint('uid', os.getuid())\n" + CORRECT)
    assert int(again["metadata"]["stdout"].split()[1]) not in (uid, os.getuid())
    assert report["score"] == report["max_score"]


def test_a_run_in_its_own_root_as_root_has_its_own_uid(grade_source) -> None:
    """As root with the interpreter under a 0700 home (root's pyenv), runs kept uid 0: whether
    the run's uid could reach the interpreter was decided in the real root, before the run's
    own root (where the interpreter's folders are reachable) existed. Decided inside it now."""
    report = grade_source("import os\nprint('uid', os.getuid())\n" + CORRECT)
    layers = report["metadata"]["isolation"]
    if os.geteuid() != 0 or "read-only-root" not in layers:
        pytest.skip("not root, or no root of the run's own here")
    assert "unprivileged-uid" in layers, layers
    assert int(report["metadata"]["stdout"].split()[1]) != 0
    assert report["score"] == report["max_score"]


def _in_fresh_process(code: str) -> list[str]:
    """Run ``code`` with the child's confinement module loaded as ``c``, in a process of its own."""
    import subprocess
    import sys

    confine = Path(sandbox.__file__).with_name("confine.py")
    script = ("import importlib.util, sys\n"
              f"spec = importlib.util.spec_from_file_location('c', {str(confine)!r})\n"
              "c = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(c)\n" + code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_dropping_to_nobody_stops_signals_and_writes(tmp_path: Path) -> None:
    """The root path (Gradescope): after the drop the child can neither signal the grader nor
    write root's files. Readability of Python is assumed here; it is checked in real runs."""
    if os.geteuid() != 0:
        pytest.skip("only a root grader drops privileges")
    target = tmp_path / "grader-owned.txt"
    target.write_text("keep")
    work = tmp_path / "work"
    work.mkdir()
    out = _in_fresh_process(
        "import os\nc.world_readable = lambda path: True\n"
        f"os.chdir({str(work)!r})\nprint(c.drop_to_nobody(os.getcwd(), []), os.getuid())\n"
        f"try:\n    os.kill({os.getpid()}, 0)\n    print('signalled')\n"
        "except PermissionError:\n    print('refused')\n"
        f"try:\n    open({str(target)!r}, 'w').write('x')\n    print('written')\n"
        "except PermissionError:\n    print('refused')\n"
        "open('scratch.txt', 'w').write('ok')\nprint('workdir-writable')\n")
    assert out == ["True", "65534", "refused", "refused", "workdir-writable"]
    assert target.read_text() == "keep"


def _open_fds_when_reaped() -> int:
    """Our open fds, once the background reapers of finished children are done (they read
    /proc while they work)."""
    import threading

    from grader.sandbox.child import REAPER_THREAD

    for thread in threading.enumerate():
        if thread.name == REAPER_THREAD:
            thread.join(10)
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("in_memory", [True, False], ids=["memfd", "temporary-file"])
def test_what_every_child_of_a_run_prints_is_in_the_report(
        grade_source, monkeypatch: pytest.MonkeyPatch, in_memory: bool) -> None:
    """Python's prints, raw writes to fd 1 and 2, from the first child and from the one that
    replaces it after it dies, in order; kept in memory where the system can, else in an
    unnamed temporary file (macOS has no memfd)."""
    if not in_memory:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    source = wrap("import os\n"
                  "print('call', flush=True)\n"
                  "os.write(2, b'raw-stderr ')\n"
                  "os._exit(3)")
    report = grade_source("import os\nos.write(1, b'loaded ')\n" + source, limits=FAST)
    words = report["metadata"]["stdout"].split()
    assert words[:6] == ["loaded", "call", "raw-stderr"] * 2, words


def test_grading_many_submissions_leaks_no_file_descriptors(grade_source) -> None:
    grade_source(CORRECT)
    before = _open_fds_when_reaped()
    for body in ("return _correct(Q, K, V, mask)", "while True:\n    pass", "os._exit(1)"):
        grade_source(wrap(body), limits=FAST)
    assert _open_fds_when_reaped() == before


def test_the_grader_cannot_be_signalled(grade_source) -> None:
    """Signal 0 probes permission without delivering anything: the grader's process, its group
    and kill(-1) are refused (seccomp) or name no process at all (a pid namespace); the
    submission's own process can be signalled."""
    targets = (os.getpid(), -os.getpgrp(), -1)
    probe = ("import os\nseen = []\n"
             f"for target in ({targets[0]}, {targets[1]}, {targets[2]}, os.getpid()):\n"
             "    try:\n        os.kill(target, 0)\n        seen.append('sent')\n"
             "    except PermissionError:\n        seen.append('refused')\n"
             "    except ProcessLookupError:\n        seen.append('none')\n"
             "print('signals', *seen)\n")
    report = grade_source(probe + CORRECT)
    layers = report["metadata"]["isolation"]
    if not {"seccomp", "pid-namespace", "landlock"} & set(layers):
        pytest.skip("neither seccomp, Landlock nor a pid namespace is available here")
    seen = report["metadata"]["stdout"].split()[1:]
    assert all(answer in ("refused", "none") for answer in seen[:3]), seen
    assert seen[3] == "sent"
    assert report["score"] == report["max_score"]


def test_killing_the_grader_leaves_a_report(tmp_path: Path) -> None:
    """The real attack, against the command-line grader (a process of its own)."""
    from .conftest import run_cli

    harmless = tmp_path / "correct.py"
    harmless.write_text(CORRECT)
    layers = json.loads(run_cli("grade", str(harmless)).stdout)["metadata"]["isolation"]
    if "seccomp" not in layers:
        pytest.skip("no seccomp here: a submission can kill the grader (see SECURITY.md)")
    path = tmp_path / "killer.py"
    # its parent, or in a pid namespace (where the parent is out of sight) the namespace's init
    path.write_text("import os, signal\ntry:\n    os.kill(os.getppid() or 1, signal.SIGKILL)\n"
                    "except PermissionError:\n    print('refused')\n" + CORRECT)
    done = run_cli("grade", str(path))
    assert done.returncode == 0, done.returncode
    report = json.loads(done.stdout)
    assert report["score"] == report["max_score"]


def test_grading_from_several_threads_keeps_each_result(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from grader import grade

    buggy = tmp_path / "buggy.py"
    buggy.write_text((SUBMISSIONS / "attention" / "scale_by_dk.py").read_text())
    correct = tmp_path / "correct.py"
    correct.write_text(CORRECT)
    with ThreadPoolExecutor(3) as pool:
        reports = list(pool.map(grade, [correct, buggy, correct, buggy]))
    assert [r["score"] == r["max_score"] for r in reports] == [True, False, True, False]
    assert [m["id"] for m in reports[1]["misconceptions"]] == ["scale-by-dk"]


def test_an_import_that_fails_inside_an_installed_package_is_not_a_missing_package(
        grade_source) -> None:
    """A package that is there but fails to import (half-way, for want of memory or time, or a
    broken part of it) is never told to the student as "not installed"."""
    source = textwrap.dedent("""\
        import os, sys
        os.makedirs("brokenpkg", exist_ok=True)
        open("brokenpkg/__init__.py", "w").write("import brokenpkg.lost_part\\n")
        sys.path.insert(0, os.getcwd())
        import brokenpkg
        """)
    report = grade_source(source + CORRECT, assignment="attention")
    kinds = [e["kind"] for e in report["errors"]]
    assert "missing-dependency" not in kinds and "runtime-error" in kinds
    assert "not installed" not in json.dumps(report["errors"])
    absent = grade_source("import surely_not_a_package_here\n" + CORRECT, assignment="attention")
    assert [e["kind"] for e in absent["errors"]][0] == "missing-dependency"


def _graded(tmp_path: Path, source: str) -> dict:
    from grader import grade

    path = tmp_path / "attention.py"
    path.write_text(source)
    return grade(path, assignment="attention", limits=FAST)


BUGGY = (SUBMISSIONS / "attention" / "scale_by_dk.py").read_text()
COUNTING = ("\n_counted = scaled_dot_product_attention\n\n"
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
            "    print('.', end='', flush=True)\n"
            "    return _counted(Q, K, V, mask)\n")


def test_traced_reruns_are_made_only_when_a_report_may_quote_a_line(tmp_path: Path) -> None:
    """The traced reruns come after the graded calls: none for code that answers as the
    reference does (nothing to point at), every traced probe's for code with a mistake."""
    from grader.core.assignments import get

    probes = get("attention").probes()
    graded_calls = sum(1 + bool(p.repeat) for p in probes)
    # a traced rerun is the call (repeated too, if it is), then that call under the tracer
    reruns = sum(2 + bool(p.repeat) for p in probes if p.traced)
    correct = _graded(tmp_path, CORRECT + COUNTING)
    assert correct["score"] == correct["max_score"]
    assert correct["metadata"]["stdout"].count(".") == graded_calls
    buggy = _graded(tmp_path, BUGGY + COUNTING)
    assert [f["id"] for f in buggy["misconceptions"]] == ["scale-by-dk"]
    assert buggy["metadata"]["stdout"].count(".") == graded_calls + reruns
    assert buggy["misconceptions"][0].get("location"), buggy["misconceptions"][0]


def test_what_happens_in_the_traced_reruns_changes_no_outcome(tmp_path: Path) -> None:
    """Code that behaves well for the graded calls and then hangs (or dies) when the traced
    reruns come keeps its score and its findings; it only loses the quoted line."""
    from grader.core.assignments import get

    graded_calls = sum(1 + bool(p.repeat) for p in get("attention").probes())
    plain = _graded(tmp_path, BUGGY)
    for afterwards in ("while True:\n            pass", "os._exit(3)", "raise SystemExit(1)"):
        late = _graded(tmp_path, BUGGY + (
            "\nimport os\n_calls = [0]\n_graded = scaled_dot_product_attention\n\n"
            "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
            "    _calls[0] += 1\n"
            f"    if _calls[0] > {graded_calls}:\n"
            f"        {afterwards}\n"
            "    return _graded(Q, K, V, mask)\n"))
        assert (late["score"], late["errors"]) == (plain["score"], plain["errors"]), afterwards
        assert [f["id"] for f in late["misconceptions"]] == [f["id"] for f in plain["misconceptions"]]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux prctl")
def test_a_fork_of_a_subreaper_becomes_one_itself() -> None:
    """Being the subreaper that collects a run's orphans is not inherited by a fork (a batch's
    pool worker, forked from a process that graded before), so the fork must ask for it again
    and not take its parent's word for it."""
    import ctypes

    from grader.sandbox.processes import become_subreaper

    assert become_subreaper()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's answer is its exit status
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(-1)
        libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        before = flag.value
        become_subreaper()
        libc.prctl(37, ctypes.byref(flag), 0, 0, 0)
        os._exit(0 if (before, flag.value) == (0, 1) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
