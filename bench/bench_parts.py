"""What a multi-part assignment costs: one run of the submission for every part, against one
run per part (what grading each part as an assignment of its own takes).

    python bench/bench_parts.py [--rounds 5]

A submission that defines the three functions of a course folder made of the built-in softmax,
attention and causal-mask assignments is graded (a) with that folder, in one run, and (b) as the
three assignments one after the other, in turns in the same run, with every isolation layer the
machine allows. Prints the medians and their ratio (b / a).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "submissions"
PARTS = ("softmax", "attention", "causal_mask")
SOURCES = ("softmax/correct_basic.py", "attention/correct_matmul.py",
           "causal_mask/correct_tril.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    sys.path.insert(0, str(ROOT))
    from grader import grade

    with tempfile.TemporaryDirectory() as folder:
        course = Path(folder) / "unit"
        course.mkdir()
        (course / "assignment.toml").write_text(
            'id = "unit"\nkind = "course"\n' + "".join(
                f'[[parts]]\nassignment = "{part}"\n' for part in PARTS))
        submission = Path(folder) / "unit.py"
        submission.write_text("\n\n".join((FIXTURES / s).read_text() for s in SOURCES))
        one_run, per_part = [], []
        grade(submission, assignment=str(course))  # (warm: the grader's own imports)
        for _ in range(rounds):
            started = time.perf_counter()
            report = grade(submission, assignment=str(course))
            one_run.append(time.perf_counter() - started)
            assert report["score"] == report["max_score"], report["errors"]
            started = time.perf_counter()
            for part in PARTS:
                grade(submission, assignment=part)
            per_part.append(time.perf_counter() - started)
    a, b = statistics.median(one_run), statistics.median(per_part)
    print(f"one run for {len(PARTS)} parts: {a:.3f} s; one run per part: {b:.3f} s; "
          f"ratio {b / a:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
