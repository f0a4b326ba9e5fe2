"""Settings every place that grades shares: the budgets of one submission."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Limits:
    """Budgets for one submission. Times in seconds; the defaults suit one attention assignment."""

    import_seconds: float = 15.0
    call_seconds: float = 5.0
    total_seconds: float = 30.0
    cell_seconds: float = 10.0
    memory_mb: int = 3072
    file_size_mb: int = 64
    open_files: int = 256
    max_restarts: int = 2
    max_result_mb: int = 64
    #: run code even where no filesystem layer can keep it off the grader's own files
    unsafe_no_fs_isolation: bool = False

    def for_child(self) -> dict[str, int | float]:
        return {
            "memory_bytes": self.memory_mb << 20,
            "fsize_bytes": self.file_size_mb << 20,
            "nofile": self.open_files,
            "cpu_seconds": int(self.total_seconds) + 5,
            "cell_seconds": self.cell_seconds,
        }

    def as_dict(self) -> dict[str, float | bool]:
        return asdict(self)


DEFAULT_LIMITS = Limits()
