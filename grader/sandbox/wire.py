"""The framing both sides of the result channel speak: a header of JSON plus raw array bytes.

Frame = MAGIC (4 bytes) | header length (u32 LE) | blob length (u64 LE) | header | blob.
Arrays travel as (dtype, shape, offset, nbytes) in the header and raw bytes in the blob; never as
pickle. This module is standard-library only: the child worker imports a copy of nothing from the
grader, it re-implements these few lines (see ``worker.py``), so the two are tested against each
other in ``tests/test_sandbox.py``.
"""

from __future__ import annotations

import json
import struct
from typing import Any

MAGIC = b"AGF1"
PREFIX = struct.Struct("<4sIQ")

MAX_HEADER_BYTES = 1 << 20


class ProtocolError(Exception):
    """The channel carried something that is not a well-formed frame of this run."""


def encode(header: dict[str, Any], blob: bytes = b"") -> bytes:
    payload = json.dumps(header, separators=(",", ":")).encode()
    return PREFIX.pack(MAGIC, len(payload), len(blob)) + payload + blob


class FrameReader:
    """Incrementally cut frames out of a byte stream, refusing oversized or malformed ones."""

    def __init__(self, max_blob_bytes: int) -> None:
        self.buffer = bytearray()
        self.max_blob_bytes = max_blob_bytes

    def feed(self, data: bytes) -> list[tuple[dict[str, Any], bytes]]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= PREFIX.size:
            magic, header_len, blob_len = PREFIX.unpack_from(self.buffer)
            if magic != MAGIC:
                raise ProtocolError("bad frame marker")
            if header_len > MAX_HEADER_BYTES or blob_len > self.max_blob_bytes:
                raise ProtocolError("frame too large")
            end = PREFIX.size + header_len + blob_len
            if len(self.buffer) < end:
                break
            raw_header = bytes(self.buffer[PREFIX.size : PREFIX.size + header_len])
            blob = bytes(self.buffer[PREFIX.size + header_len : end])
            del self.buffer[:end]
            try:
                header = json.loads(raw_header)
            except ValueError as exc:
                raise ProtocolError("header is not JSON") from exc
            if not isinstance(header, dict):
                raise ProtocolError("header is not an object")
            frames.append((header, blob))
        return frames
