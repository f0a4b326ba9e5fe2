"""Every fixture's report, on the public probes and a hidden seed, as one JSON file: run it before
and after a refactoring that must not change behaviour, and compare.

    python bench/snapshot_reports.py --out before.json
    ... change the code ...
    python bench/snapshot_reports.py --compare before.json

Only what depends on the machine or the clock is left out (durations, the isolation layers
found, captured output); everything else of every report must be equal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "submissions"
SEEDS = (0, 3)
VOLATILE = ("duration_seconds", "isolation", "stdout")


def snapshot() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from grader import grade, sandbox

    reports: dict[str, Any] = {}
    with sandbox.forking(True):  # (as batch grades: faster than an interpreter a report)
        for path in sorted(FIXTURES.rglob("*.py")):
            for seed in SEEDS:
                report = grade(path, assignment=path.parent.name, seed=seed)
                for key in VOLATILE:
                    report["metadata"].pop(key, None)
                reports[f"{path.relative_to(FIXTURES)}@{seed}"] = report
    return reports


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the snapshot here")
    parser.add_argument("--compare", type=Path, help="compare with this earlier snapshot")
    arguments = parser.parse_args()
    reports = snapshot()
    if arguments.out:
        arguments.out.write_text(json.dumps(reports, indent=1, sort_keys=True) + "\n")
    if arguments.compare:
        before = json.loads(arguments.compare.read_text())
        changed = sorted(k for k in before.keys() & reports.keys() if before[k] != reports[k])
        missing = sorted(before.keys() - reports.keys())
        for key in changed:
            print(f"changed: {key}")
        for key in missing:
            print(f"missing: {key}")
        new = len(reports.keys() - before.keys())
        print(f"{len(reports)} reports: {len(changed)} changed, {len(missing)} missing, "
              f"{new} new (fixtures added since)")
        return 1 if changed or missing else 0
    print(f"{len(reports)} reports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
