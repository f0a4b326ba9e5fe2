"""Writing the grader's output files: whole or not at all, never through a planted link."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_atomically(path: Path, text: str, *, as_folder: bool = False) -> None:
    """Write ``text`` to a new file beside ``path`` and rename it over ``path``: readers see the
    old file or the new one, and whatever stood at ``path`` (a file, a link) is replaced. The
    file is readable by its owner alone, or with ``as_folder`` as its folder is by its owner and
    group (the folder's group, and its mode without execute bits: a class's reports for the
    course's staff), never by every user (a report holds the hidden probes' values, which a
    submission run as another uid, with no other layer between, could read)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            if as_folder:
                folder = os.stat(path.parent)
                with contextlib.suppress(OSError):  # (a group its owner is not in)
                    os.fchown(out.fileno(), -1, folder.st_gid)
                os.fchmod(out.fileno(), stat.S_IMODE(folder.st_mode) & 0o660)
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
