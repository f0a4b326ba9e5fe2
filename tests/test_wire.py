"""The channel's format (``grader/sandbox/wire.py``), both sides: the copy the child loads by
path (as ``worker.py`` does) writes what the grader's reads, and the grader refuses any frame
or array that is not exactly what it expects, before interpreting a byte of it."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest

from grader.model import Probe
from grader.sandbox import wire
from grader.sandbox.wire import PREFIX, FrameReader, ProtocolError, decode_arrays


def load_by_path() -> ModuleType:
    """``wire.py`` as the child loads it: from its file, under a name of its own, with nothing
    of the grader package imported."""
    spec = importlib.util.spec_from_file_location("_ag_wire_test", wire.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def child_wire() -> ModuleType:
    return load_by_path()


def test_the_childs_copy_imports_nothing_of_the_grader(child_wire: ModuleType) -> None:
    names = {name for name, value in vars(child_wire).items() if isinstance(value, ModuleType)}
    assert names <= {"json", "os", "struct"}, names


def test_a_frame_the_child_writes_reads_back_whole(child_wire: ModuleType) -> None:
    header = {"type": "result", "index": 3, "nonce": "n", "text": "é\u2603"}
    frame = child_wire.encode(header, b"\x00\x01blob")
    assert FrameReader(1 << 10).feed(frame) == [(header, b"\x00\x01blob")]


def test_frames_cut_anywhere_are_put_back_together(child_wire: ModuleType) -> None:
    frames = [({"n": i}, bytes([i]) * i) for i in range(5)]
    stream = b"".join(child_wire.encode(h, b) for h, b in frames)
    reader = FrameReader(1 << 10)
    got = []
    for i in range(0, len(stream), 3):
        got += reader.feed(stream[i:i + 3])
    assert got == frames and not reader.buffer


def prefix(header_len: int, blob_len: int, magic: bytes = wire.MAGIC) -> bytes:
    return PREFIX.pack(magic, header_len, blob_len)


@pytest.mark.parametrize("data,said", [
    (prefix(2, 0, magic=b"PKL\x00") + b"{}", "bad frame marker"),
    (prefix(wire.MAX_HEADER_BYTES + 1, 0), "frame too large"),
    (prefix(2, 1025), "frame too large"),
    (prefix(5, 0) + b"{nope", "header is not JSON"),
    (prefix(4, 0) + b"[1] ", "header is not an object"),
    (prefix(20_000, 0) + b"[" * 10_000 + b"]" * 10_000, "header is not JSON"),
])
def test_malformed_frames_are_refused(data: bytes, said: str) -> None:
    with pytest.raises(ProtocolError, match=said):
        FrameReader(1 << 10).feed(data)


def test_an_oversized_frame_is_refused_before_its_bytes_arrive() -> None:
    """The size in the prefix is enough: the grader never buffers a frame it would refuse."""
    with pytest.raises(ProtocolError):
        FrameReader(1 << 20).feed(prefix(2, (1 << 20) + 1))


def test_a_frame_not_yet_whole_is_kept_not_returned() -> None:
    reader = FrameReader(1 << 10)
    frame = wire.encode({"a": 1}, b"xyz")
    assert reader.feed(frame[:-1]) == []
    assert reader.feed(frame[-1:]) == [({"a": 1}, b"xyz")]


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:
            pass


def test_the_child_reads_a_request_whole(child_wire: ModuleType, pipe: tuple[int, int]) -> None:
    read, write = pipe
    os.write(write, wire.encode({"type": "calls"}, b"abc") + wire.encode({"type": "more"}))
    assert child_wire.read_frame(read) == ({"type": "calls"}, b"abc")
    assert child_wire.read_frame(read) == ({"type": "more"}, b"")


@pytest.mark.parametrize("cut", [0, 5, PREFIX.size + 3, -1])
def test_a_truncated_request_is_the_end_of_the_channel(child_wire: ModuleType,
                                                       pipe: tuple[int, int], cut: int) -> None:
    read, write = pipe
    frame = wire.encode({"type": "calls"}, b"abc")
    os.write(write, frame[:cut])
    os.close(write)
    with pytest.raises(EOFError):
        child_wire.read_frame(read)


def test_a_request_without_the_marker_is_the_end_of_the_channel(
        child_wire: ModuleType, pipe: tuple[int, int]) -> None:
    read, write = pipe
    os.write(write, prefix(2, 0, magic=b"EVIL") + b"{}")
    with pytest.raises(EOFError):
        child_wire.read_frame(read)


# -- arrays ----------------------------------------------------------------------------------

def packed(*arrays: tuple[str, np.ndarray]) -> tuple[dict, bytes]:
    """A result frame's header and blob, as ``worker.pack`` makes them."""
    metas, chunks, offset = [], [], 0
    for role, array in arrays:
        data = array.tobytes()
        metas.append({"role": role, "dtype": array.dtype.str, "shape": list(array.shape),
                      "offset": offset, "nbytes": len(data)})
        chunks.append(data)
        offset += len(data)
    return {"arrays": metas}, b"".join(chunks)


def test_arrays_come_back_equal_in_native_order() -> None:
    output = np.arange(12, dtype=np.float32).reshape(3, 4)
    swapped = np.arange(6, dtype=">f8").reshape(2, 3)
    header, blob = packed(("output", output), ("weights", swapped),
                          ("flag", np.array([True, False])), ("none", np.zeros((0, 2))))
    arrays = decode_arrays(header, blob)
    assert list(arrays) == ["output", "weights", "flag", "none"]
    np.testing.assert_array_equal(arrays["output"], output)
    assert arrays["weights"].dtype.isnative and np.array_equal(arrays["weights"], swapped)
    assert arrays["none"].shape == (0, 2)


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="no extended precision here")
def test_extended_precision_comes_back_as_float64() -> None:
    header, blob = packed(("output", np.ones(3, dtype=np.longdouble)))
    assert decode_arrays(header, blob)["output"].dtype == np.float64


def described(**changes: object) -> dict:
    meta = {"role": "output", "dtype": "<f8", "shape": [2], "offset": 0, "nbytes": 16}
    meta.update(changes)
    return {"arrays": [meta]}


@pytest.mark.parametrize("header,said", [
    ({"arrays": "all"}, "bad array list"),
    ({"arrays": ["x"]}, "bad array description"),
    (described(dtype="|O"), "unexpected dtype"),
    (described(dtype="<U1", nbytes=8), "unexpected dtype"),
    (described(dtype="<c16", nbytes=32), "unexpected dtype"),
    (described(dtype="V8,V8"), "unexpected dtype"),
    (described(dtype="(2,)<f8", nbytes=32), "unexpected dtype"),
    (described(dtype=["<f8"]), "unexpected dtype"),
    (described(dtype="float64_but_longer"), "unexpected dtype"),
    (described(shape=[2.0]), "bad shape"),
    (described(shape=[True, 2]), "bad shape"),
    (described(shape=[-1]), "bad shape"),
    (described(shape=[1] * 33), "bad shape"),
    (described(shape="2"), "bad shape"),
    (described(offset=-8), "bad offset"),
    (described(offset=1.0), "bad offset"),
    (described(nbytes=8), "does not match its shape"),
    (described(offset=8), "does not match its shape"),
    (described(shape=[1 << 39, 1 << 39], nbytes=16), "does not match its shape"),
])
def test_arrays_not_exactly_as_described_are_refused(header: dict, said: str) -> None:
    with pytest.raises(ProtocolError, match=said):
        decode_arrays(header, bytes(16))


def test_a_refused_array_is_a_protocol_error_not_a_crash_of_the_grader() -> None:
    """(``session.MALFORMED`` lists what reading a forged frame may raise: ProtocolError first)"""
    from grader.sandbox.session import MALFORMED

    assert MALFORMED[0] is ProtocolError


# -- the calls out ---------------------------------------------------------------------------

def test_the_calls_frame_sends_an_array_passed_twice_once() -> None:
    x = np.arange(6.0).reshape(2, 3)
    probe = Probe("self", (x, x, 0.5, None), frozenset(), repeat=True, traced=True)
    frames = FrameReader(1 << 20).feed(wire.encode_calls("f", [probe], {"task": "t"},
                                                         trace=True))
    (header, blob), = frames
    assert header["function"] == "f" and header["task"] == "t"
    assert [a["shape"] for a in header["arrays"]] == [[2, 3]] and len(blob) == x.nbytes
    (call,) = header["calls"]
    assert call["args"] == [{"array": 0}, {"array": 0}, {"value": 0.5}, {"value": None}]
    assert call["repeat"] and call["trace"]
    assert json.loads(json.dumps(header)) == header  # (plain JSON, never pickle)


def test_the_child_side_needs_no_numpy_to_load() -> None:
    """``wire`` imports NumPy only inside the grader's functions: the child loads it before
    NumPy, and a tiny interpreter can read frames with it."""
    blocked = dict.fromkeys(("numpy",))
    saved = {name: sys.modules.get(name) for name in blocked}
    sys.modules.update(blocked)  # (None there: "import numpy" fails)
    try:
        module = load_by_path()
    finally:
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value
    assert module.encode({"a": 1})[:4] == wire.MAGIC
