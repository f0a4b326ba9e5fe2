"""Settings every place that grades shares: the budgets of one submission."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from grader.model import DEFAULT_SEED

#: the probe seed when none is given (a hidden seed for the whole class, in CI or Gradescope)
SEED_VARIABLE = "ATTENTION_GRADER_SEED"


def seed_from_environment(value: int | None) -> int:
    """``value``, else ``$ATTENTION_GRADER_SEED``, else the public seed; ``ValueError`` (saying
    what is wrong) when the variable is not an integer."""
    if value is not None:
        return value
    from_env = os.environ.get(SEED_VARIABLE, "").strip()
    if not from_env:
        return DEFAULT_SEED
    try:
        return int(from_env)
    except ValueError:
        raise ValueError(f"{SEED_VARIABLE}={from_env!r} is not an integer.") from None


@dataclass(frozen=True)
class Limits:
    """Budgets for one submission. Times in seconds; the defaults suit one attention assignment."""

    import_seconds: float = 15.0
    call_seconds: float = 5.0
    total_seconds: float = 30.0
    cell_seconds: float = 10.0
    memory_mb: int = 3072
    file_size_mb: int = 64
    #: what a run may write in all (its folder and private /tmp), where it has its own root
    disk_mb: int = 256
    open_files: int = 256
    max_restarts: int = 2
    max_result_mb: int = 64
    #: run code even where no filesystem layer can keep it off the grader's own files
    unsafe_no_fs_isolation: bool = False
    #: files a submission must not read (a class's other submissions, set by batch): where its
    #: own uid is its only file system layer, none of them may be readable by every user
    private_paths: tuple[str, ...] = ()

    def for_child(self) -> dict[str, int | float]:
        return {
            "memory_bytes": self.memory_mb << 20,
            "fsize_bytes": self.file_size_mb << 20,
            "disk_mb": self.disk_mb,
            "nofile": self.open_files,
            "cpu_seconds": int(self.total_seconds) + 5,
            "cell_seconds": self.cell_seconds,
        }

    def as_dict(self) -> dict[str, float | bool]:
        return asdict(self)


DEFAULT_LIMITS = Limits()
