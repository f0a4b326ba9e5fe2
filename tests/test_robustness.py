"""Broken inputs, bounded grader memory, and hidden probes against memorised answers."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import grade
from grader.core.report import validate
from grader.model import ERROR_KINDS

from .conftest import SUBMISSIONS, notebook

pytestmark = pytest.mark.e2e  # starts child processes: the slow tier

CORRECT = (SUBMISSIONS / "attention" / "correct_matmul.py").read_text()
NOTEBOOK = notebook(("markdown", "# Attention"), "import numpy as np", CORRECT)


def _mutations(seed: int) -> list[tuple[str, bytes]]:
    """Seeded corruptions of a good .py and a good notebook: truncations, flipped bytes,
    garbage, wrong JSON types, odd encodings."""
    rng = random.Random(seed)
    py, nb = CORRECT.encode(), NOTEBOOK.encode()
    cases: list[tuple[str, bytes]] = []
    for name, data in (("py", py), ("ipynb", nb)):
        cut = rng.randrange(1, len(data))
        cases.append((name, data[:cut]))
        flipped = bytearray(data)
        for _ in range(8):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        cases.append((name, bytes(flipped)))
        cases.append((name, bytes(rng.randrange(256) for _ in range(2000))))
        cases.append((name, b"\xef\xbb\xbf" + data))  # UTF-8 BOM
        cases.append((name, data.decode().encode("utf-16")))
    document = json.loads(NOTEBOOK)
    odd_cells: list[Any] = [
        {"cell_type": "code", "source": 42},
        {"cell_type": "code"},
        {"cell_type": "raw", "source": CORRECT},
        "not a cell",
        {"cell_type": "code", "source": ["def scaled_dot_product_attention(", 7]},
    ]
    for cell in odd_cells:
        broken = {**document, "cells": [cell, *document["cells"]]}
        cases.append(("ipynb", json.dumps(broken).encode()))
    for shape in ([], 5, "text", {"cells": "nope"}, {"nbformat": 99, "cells": []},
                  {"nbformat": 4}, {"cells": [[["deep"] * 3] * 3]}):
        cases.append(("ipynb", json.dumps(shape).encode()))
    cases.append(("ipynb", b"[" * 100_000))
    cases.append(("py", b"x = (" * 50_000))
    cases.append(("py", b"\x00" * 100))
    return cases


@pytest.mark.parametrize("seed", [1, 2])
def test_corrupted_files_always_give_a_valid_report(tmp_path: Path, seed: int) -> None:
    for index, (suffix, data) in enumerate(_mutations(seed)):
        path = tmp_path / f"case{index}.{suffix}"
        path.write_bytes(data)
        started = time.monotonic()
        report = grade(path, assignment="attention")
        validate(report)
        assert time.monotonic() - started < 40, index
        assert report["status"] in ("graded", "error"), index
        assert all(e["kind"] in ERROR_KINDS for e in report["errors"]), index
        if report["status"] == "error":
            assert report["score"] == 0 and report["errors"], index
        assert "Traceback (most recent call last)" not in json.dumps(
            [e["message"] for e in report["errors"] if e["kind"] == "crashed"]), index


def test_huge_stored_outputs_do_not_matter(tmp_path: Path) -> None:
    document = json.loads(NOTEBOOK)
    picture = "iVBORw0KGgo" + "A" * (40 << 20)  # 40 MB of stored image output
    document["cells"][1]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                        "data": {"image/png": picture}}]
    document["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout",
                                        "text": ["line\n"] * 200_000}]
    path = tmp_path / "heavy.ipynb"
    path.write_text(json.dumps(document))
    started = time.monotonic()
    report = grade(path)
    validate(report)
    assert report["score"] == report["max_score"] and time.monotonic() - started < 20


def test_grader_memory_stays_bounded(tmp_path: Path) -> None:
    """A submission answering every call with the largest array the child may send, flooding
    stdout and leaving big files: the grader's own peak memory stays small."""
    hostile = tmp_path / "hostile.py"
    hostile.write_text(textwrap.dedent("""\
        import numpy as np, sys
        sys.stdout.write("x" * (50 << 20))
        open("big.bin", "wb").write(b"0" * (60 << 20))

        def scaled_dot_product_attention(Q, K, V, mask=None):
            big = np.ones((1400, 1400))  # fits one result frame
            return big, big
        """))
    # VmHWM, this process's own peak: ru_maxrss can report the peak of the process that forked
    # it (a pytest that loaded torch, say), carried over across exec
    script = ("import sys\nfrom grader import grade\n"
              f"report = grade({str(hostile)!r})\n"
              "peak = next(line.split()[1] for line in open('/proc/self/status')\n"
              "            if line.startswith('VmHWM:'))\n"
              "print(report['score'], peak)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    score, peak_kb = done.stdout.split()
    # one ~31 MB frame in flight costs a few transient copies (about 250 MB at the peak here);
    # keeping every call's arrays, as before the cap, cost about 900 MB and grows per probe
    assert int(peak_kb) < 400 * 1024, f"grader peak RSS {int(peak_kb) >> 10} MB"
    assert float(score) < 2


def _memorising_submission() -> str:
    """Exact public answers looked up by input bytes, and zeros for anything else: what a
    student who copied the outputs of the public probes would hand in."""
    from grader.core.assignments import get

    spec = get("attention")
    table = {}
    for probe in spec.probes(0):
        key = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in probe.args
                                      if isinstance(a, np.ndarray))).hexdigest()
        table[key] = spec.reference(*probe.args)[0].tolist()
    return textwrap.dedent(f"""\
        import hashlib
        import numpy as np
        ANSWERS = {json.dumps(table)}

        def scaled_dot_product_attention(Q, K, V, mask=None):
            arrays = [a for a in (Q, K, V, mask) if a is not None]
            key = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes()
                                          for a in arrays)).hexdigest()
            if key in ANSWERS:
                return np.array(ANSWERS[key])
            return np.zeros(Q.shape[:-1] + (V.shape[-1],))
        """)


def test_hidden_seed_gives_memorised_answers_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memorised.py"
    path.write_text(_memorising_submission())
    public = grade(path, seed=0)
    hidden = grade(path, seed=90210)
    assert public["score"] == public["max_score"]  # the public probes alone cannot tell
    assert hidden["score"] <= 3, hidden["score"]
    correct = tmp_path / "correct.py"
    correct.write_text(CORRECT)
    assert grade(correct, seed=90210)["score"] == hidden["max_score"]
