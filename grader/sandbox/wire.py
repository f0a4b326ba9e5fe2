"""The framing and the array codec both sides of the channel speak: a header of JSON plus raw array bytes.

Frame = MAGIC (4 bytes) | header length (u32 LE) | blob length (u64 LE) | header | blob.
Arrays travel as (dtype, shape, offset, nbytes) in the header and raw bytes in the blob; never as
pickle. Standard library at import (NumPy only inside the grader's functions): the child loads
this same file by path (``worker.py``), importing nothing of the grader package;
``tests/test_wire.py`` reads with the grader's side what that copy writes.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.model import Probe

MAGIC = b"AGF1"
PREFIX = struct.Struct("<4sIQ")

MAX_HEADER_BYTES = 1 << 20
#: the role of an array a call returned, before its name (``output:weights``)
OUTPUT_ROLE = "output:"


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
            except (ValueError, RecursionError, MemoryError) as exc:
                # (RecursionError: a header nested deeper than the parser goes)
                raise ProtocolError(f"header is not JSON ({type(exc).__name__})") from None
            if not isinstance(header, dict):
                raise ProtocolError("header is not an object")
            frames.append((header, blob))
        return frames


# -- the child's side: blocking reads of the requests --------------------------------------

def read_exact(fd: int, count: int) -> bytes:
    chunks = []
    while count:
        chunk = os.read(fd, min(count, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[dict[str, Any], bytes]:
    """One request frame, read whole (EOFError when the grader is gone)."""
    magic, header_len, blob_len = PREFIX.unpack(read_exact(fd, PREFIX.size))
    if magic != MAGIC:
        raise EOFError
    header = json.loads(read_exact(fd, header_len))
    return header, read_exact(fd, blob_len)



# -- the grader's side: the calls out, the arrays back ---------------------------------------

#: the frames of recent call lists: a batch sends the same (read-only) probes to every student
_encoded: dict[tuple[Any, ...], tuple[Sequence[Probe], bytes]] = {}


def encode_calls(function: str, probes: Sequence[Probe],
                 interface: dict[str, Any] | None = None, *, trace: bool = False,
                 targets: Sequence[dict[str, Any]] = (), target_of: Sequence[int] = (),
                 peak: bool = False) -> bytes:
    """The frame of these calls; ``trace``: each call of a traced probe is run again under the
    tracer (``trace.py``), after it returns. A multi-part assignment calls several functions
    in one run: ``targets`` are their functions and callings (``{"function": ..., "interface":
    ..., "task": ...}``) and ``target_of`` says which each call is made on (else ``function``
    and ``interface`` serve every call). ``peak``: each call is the tiling check's, its peak
    allocation measured (``peak.py``) and its outputs not sent back."""
    key = (function, tuple(map(id, probes)), json.dumps(interface, sort_keys=True, default=str),
           trace, json.dumps(list(targets), sort_keys=True, default=str), tuple(target_of), peak)
    kept = _encoded.get(key)
    if kept is None:
        if len(_encoded) >= 16:
            _encoded.clear()
        # (the probes are kept with their frame: their ids stay theirs while it is cached)
        kept = _encoded[key] = (tuple(probes), _encode_calls(function, probes, interface, trace,
                                                             targets, target_of, peak))
    return kept[1]


def _encode_calls(function: str, probes: Sequence[Probe], interface: dict[str, Any] | None,
                  trace: bool, targets: Sequence[dict[str, Any]] = (),
                  target_of: Sequence[int] = (), peak: bool = False) -> bytes:
    import numpy as np

    arrays: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    offset = 0
    calls = []
    for index, probe in enumerate(probes):
        local: dict[int, int] = {}
        specs: list[dict[str, Any]] = []
        for arg in probe.args:
            if isinstance(arg, np.ndarray):
                if id(arg) not in local:
                    data = np.ascontiguousarray(arg).tobytes()
                    local[id(arg)] = len(arrays)
                    arrays.append({"dtype": arg.dtype.str, "shape": list(arg.shape),
                                   "offset": offset, "nbytes": len(data)})
                    chunks.append(data)
                    offset += len(data)
                specs.append({"array": local[id(arg)]})
            else:
                specs.append({"value": arg})
        call = {"index": index, "args": specs, "repeat": probe.repeat,
                "trace": trace and probe.traced, **({"peak": True} if peak else {})}
        if target_of:
            call["target"] = target_of[index]
        calls.append(call)
    header = {"type": "calls", "function": function, "calls": calls, "arrays": arrays,
              **(interface or {})}
    if targets:
        header["targets"] = list(targets)
    return encode(header, b"".join(chunks))


def _numeric_dtype(text: object) -> Any:
    """The dtype a frame names, when it is a plain number type (any byte order or precision)."""
    import numpy as np

    if not isinstance(text, str) or len(text) > 8:
        raise ProtocolError(f"unexpected dtype {text!r}")
    try:
        dtype = np.dtype(text)
    except TypeError as exc:
        raise ProtocolError(f"unexpected dtype {text!r}") from exc
    if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise ProtocolError(f"unexpected dtype {text!r}")
    return dtype


def decode_arrays(header: dict[str, Any], blob: bytes) -> dict[str, Any]:
    """The arrays of a result frame, checked field by field before any byte is interpreted, in
    native byte order (extended precision as float64)."""
    import numpy as np

    arrays = {}
    metas = header.get("arrays", [])
    if not isinstance(metas, list):
        raise ProtocolError("bad array list")
    for meta in metas:
        if not isinstance(meta, dict):
            raise ProtocolError("bad array description")
        dtype = _numeric_dtype(meta.get("dtype"))
        shape, offset, nbytes = meta.get("shape"), meta.get("offset"), meta.get("nbytes")
        if not (isinstance(shape, list) and len(shape) <= 32
                and all(type(s) is int and 0 <= s < 1 << 40 for s in shape)):
            raise ProtocolError("bad shape")
        if not (type(offset) is int and type(nbytes) is int and offset >= 0):
            raise ProtocolError("bad offset")
        count = 1
        for size in shape:
            count *= size
        if nbytes != count * dtype.itemsize or offset + nbytes > len(blob):
            raise ProtocolError("array size does not match its shape")
        array = np.frombuffer(blob, dtype=dtype, count=count, offset=offset).reshape(shape)
        if dtype.kind == "f" and dtype.itemsize > 8:
            array = array.astype(np.float64)
        elif not dtype.isnative:
            array = array.astype(dtype.newbyteorder("="))
        arrays[str(meta.get("role"))] = array
    return arrays
