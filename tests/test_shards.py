"""A class in shards: which student is in which shard, and merging the shards' folders into the
folder one unsharded batch writes. Built from the example class's reports: nothing is graded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.batch import SHARD_FILE, Shard, merge_shards, write_shard_manifest, write_summaries

CLASS = Path(__file__).resolve().parents[1] / "assignments" / "attention" / "example_class"
OUTPUTS = ("summary.json", "summary.csv", "summary.md", "report.html")


def _rows() -> list[dict]:
    return json.loads((CLASS / "reports" / "summary.json").read_text())


def _shard_folders(tmp_path: Path, count: int) -> list[Path]:
    """What ``batch --shard K/N`` leaves: each shard's reports, summaries and manifest."""
    rows = _rows()
    folders = []
    for index in range(1, count + 1):
        shard = Shard(index, count)
        positions = [i for i, row in enumerate(rows) if shard.holds(row["student"])]
        folder = tmp_path / f"shard-{index}"
        folder.mkdir()
        for i in positions:
            shutil.copy(CLASS / "reports" / rows[i]["report"], folder / rows[i]["report"])
        write_summaries([rows[i] for i in positions], folder, "attention")
        write_shard_manifest(folder, shard, "attention", len(rows), positions)
        folders.append(folder)
    return folders


def test_every_student_is_in_exactly_one_shard_whatever_the_rest_of_the_class() -> None:
    students = [f"student-{n}" for n in range(500)] + ["Zoë <z@x>", "=cmd|' /C calc'!A0"]
    for count in (1, 2, 3, 8):
        homes = [[k for k in range(1, count + 1) if Shard(k, count).holds(s)] for s in students]
        assert all(len(home) == 1 for home in homes)
        if count == 8:  # spread evenly enough: every shard gets some of 502
            assert {home[0] for home in homes} == set(range(1, 9))


def test_a_students_shard_is_the_same_in_another_process() -> None:
    """Not Python's salted hash: a re-run (another pod, another day) puts everyone where they
    were."""
    students = [f"student-{n}" for n in range(50)]
    here = [Shard(1, 4).holds(s) for s in students]
    code = ("from grader.batch import Shard\n"
            f"print([Shard(1, 4).holds(s) for s in {students!r}])")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}, check=True).stdout
    assert str(here) == there.strip()


@pytest.mark.parametrize("text,shard", [("1/1", Shard(1, 1)), (" 3 / 8 ", Shard(3, 8))])
def test_a_shard_is_read_as_k_of_n(text: str, shard: Shard) -> None:
    assert Shard.parse(text) == shard


@pytest.mark.parametrize("text", ["0/4", "5/4", "1", "a/b", "-1/2"])
def test_a_shard_outside_1_to_n_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Shard.parse(text)


def test_merged_shards_are_the_folder_of_one_batch(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    whole.mkdir()
    write_summaries(_rows(), whole, "attention")
    shards = _shard_folders(tmp_path, 3)
    assert all(json.loads((f / "summary.json").read_text()) for f in shards)  # none empty
    merged = tmp_path / "merged"
    merge_shards(list(reversed(shards)), merged)  # (in any order)
    for name in OUTPUTS:
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    for row in _rows():
        assert (merged / row["report"]).read_bytes() == (
            CLASS / "reports" / row["report"]).read_bytes()
    assert not (merged / SHARD_FILE).exists()


def test_merging_into_one_of_the_shards_folders_works(tmp_path: Path) -> None:
    shards = _shard_folders(tmp_path, 2)
    merge_shards(shards, shards[0])
    assert [r["student"] for r in json.loads((shards[0] / "summary.json").read_text())] == [
        r["student"] for r in _rows()]


def test_a_missing_or_doubled_shard_is_refused(tmp_path: Path) -> None:
    shards = _shard_folders(tmp_path, 3)
    with pytest.raises(ValueError, match=r"missing \[2\]"):
        merge_shards([shards[0], shards[2]], tmp_path / "out")
    with pytest.raises(ValueError, match=r"twice \[1\]"):
        merge_shards([shards[0], shards[0], shards[1], shards[2]], tmp_path / "out")
    (shards[1] / SHARD_FILE).unlink()  # a shard that never finished
    with pytest.raises(ValueError, match="not a finished shard"):
        merge_shards(shards, tmp_path / "out")


def test_shards_of_another_class_are_refused(tmp_path: Path) -> None:
    shards = _shard_folders(tmp_path, 2)
    manifest = json.loads((shards[1] / SHARD_FILE).read_text())
    manifest["class_size"] += 1
    (shards[1] / SHARD_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="different classes"):
        merge_shards(shards, tmp_path / "out")
