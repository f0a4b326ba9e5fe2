"""Child side: the intermediate arrays a call of the student's function computes, line by line.

Loaded by path in the child (standard library and NumPy only). One probe's call is run again
under ``sys.settrace``, restricted to the submission's own frames: each float array a local
variable takes (and each array a student function returns, or receives from another student
function) is kept with the line that computed it. The grader compares these values with the
stages of the recipe it has already diagnosed from the outputs, to quote the line where a
mistake enters; the values never decide a verdict.
"""

import sys
import time

import numpy as np

MAX_EVENTS = 20_000
#: the traced rerun shares its probe's call deadline: recording stops after this long
MAX_SECONDS = 0.5
MAX_VALUES = 300
MAX_ELEMENTS = 4096
#: arrays up to this size are also kept as bytes, to tell cheaply that they have not changed
MAX_RAW_ELEMENTS = 1024
#: the name of the entry kept for the line that changed an input array in place
CHANGED_INPUT = "<changed input>"

_ndarray = np.ndarray
_asarray = np.asarray
_array_equal = np.array_equal


#: the modules whose array types are read (a framework the submission imported)
FRAMEWORKS = ("torch", "jax", "jaxlib", "tensorflow")


def _framework_array(value):
    """A torch, JAX or TensorFlow array as NumPy, or None for anything else (nothing of a
    student's own class is touched, so no student ``__array__`` runs)."""
    kind = type(value)
    module = kind.__module__.split(".")[0]
    if module == "torch" and kind.__name__ in ("Tensor", "Parameter"):
        return value.detach().cpu().numpy()
    if module in ("jax", "jaxlib") and kind.__name__ in ("ArrayImpl", "Array"):
        return _asarray(value)
    if module == "tensorflow" and kind.__name__ in ("EagerTensor", "ResourceVariable"):
        return value.numpy()
    return None


def _as_float_array(value):
    """A copy of ``value`` (numbers or booleans: a mask is a value too) as a float NumPy array,
    or None. A complex array is kept as its real and imaginary parts on a last axis of 2 (the
    pairs a complex RoPE turns, and the unit numbers it turns them by)."""
    if isinstance(value, _ndarray):
        array = value
    else:
        try:
            array = _framework_array(value)
        except Exception:  # noqa: BLE001 - an odd tensor is simply not recorded
            return None
        if array is None:
            return None
    if array.dtype.kind not in "biufc" or array.size > MAX_ELEMENTS or array.ndim == 0:
        return None
    if array.dtype.kind == "c":
        return np.stack([array.real, array.imag], axis=-1).astype(np.float64)
    return _array(array)


def _array(array):
    return _asarray(array, dtype=np.float64).copy()


def _raw(value):
    """What an array was when its entry was made (shape, dtype, bytes): the same bytes again mean
    the same values, found without a comparison per line (None: not a NumPy array, or large)."""
    if not isinstance(value, _ndarray) or value.size > MAX_RAW_ELEMENTS:
        return None
    return value.shape, value.dtype, value.tobytes()


class Recorder:
    """Keeps, for each local of each student frame, its latest array value and the line that
    produced it; a name bound to a new object starts a new entry (``values`` in order)."""

    def __init__(self, is_student_file):
        self.is_student_file = is_student_file
        # [filename, line, depth, name, array, chain]: ``chain`` is the index of the entry that
        # first recorded the object (the entries of one array changed in place share it)
        self.values = []
        self.current = {}  # (frame id, name) -> (object id, index in values, _raw of the value)
        self.previous_line = {}  # frame id -> the line that ran last in that frame
        self.depth = {}  # frame id -> how deep below the graded function
        self.events = 0
        self.full = False
        self.deadline = time.perf_counter() + MAX_SECONDS

    def on_call(self, frame, event, arg):
        if event != "call" or self.full or not self.is_student_file(frame.f_code.co_filename):
            return None
        caller = frame.f_back
        frame_id = id(frame)
        if caller is not None and id(caller) in self.depth:
            self.depth[frame_id] = self.depth[id(caller)] + 1
            # what a student function receives was computed on the calling line
            self._snapshot(frame, caller.f_code.co_filename, caller.f_lineno,
                           self.depth[id(caller)])
        else:  # the graded function itself: its arguments are the test input, not computed
            self.depth[frame_id] = 0
            self._snapshot(frame, None, 0, 0)
        self.previous_line[frame_id] = frame.f_lineno
        return self.on_event

    def on_event(self, frame, event, arg):
        self.events += 1
        if self.events > MAX_EVENTS or self.full or (
                self.events % 256 == 0 and time.perf_counter() > self.deadline):
            self.full = True
            return None
        frame_id = id(frame)
        filename = frame.f_code.co_filename
        line = self.previous_line.get(frame_id, frame.f_lineno)
        depth = self.depth.get(frame_id, 0)
        if event == "line":
            self._snapshot(frame, filename, line, depth)
            self.previous_line[frame_id] = frame.f_lineno
        elif event == "return":
            self._snapshot(frame, filename, line, depth)
            for value in (arg if isinstance(arg, (tuple, list)) else (arg,))[:4]:
                self._keep(filename, frame.f_lineno, depth, "<return>", value, None)
            self.depth.pop(frame_id, None)
            self.previous_line.pop(frame_id, None)
        return self.on_event

    def _snapshot(self, frame, filename, line, depth):
        try:
            local = dict(frame.f_locals)
        except Exception:  # noqa: BLE001 - a frame may refuse; nothing is recorded then
            return
        for name, value in local.items():
            self._keep(filename, line, depth, str(name)[:60], value, (id(frame), name))

    def _keep(self, filename, line, depth, name, value, key):
        if not isinstance(value, _ndarray) and not type(value).__module__.startswith(FRAMEWORKS):
            return
        known = self.current.get(key) if key is not None else None
        if known is not None and known[0] == id(value):
            if (known[2] is not None and value.shape == known[2][0]
                    and value.dtype == known[2][1] and value.tobytes() == known[2][2]):
                return  # the very bytes its entry was made from (the hot path)
            entry = self.values[known[1]]
            if isinstance(value, _ndarray) and value.shape == entry[4].shape and \
                    _array_equal(value, entry[4], equal_nan=True):
                return  # unchanged: compared as it is, not copied (the hot path)
            array = _as_float_array(value)
            if array is None or (array.shape == entry[4].shape
                                 and _array_equal(array, entry[4], equal_nan=True)):
                return
            if entry[0] is None:  # a test input, changed in place by this line: said once
                entry[0] = CHANGED_INPUT
                self.values.append([filename, line, depth, CHANGED_INPUT, array, entry[5]])
            elif len(self.values) < MAX_VALUES:
                # changed in place, by this line: a value of its own (what it held before
                # stays, as code that fills an array slice by slice computes a stage each time)
                self.values.append([filename, line, depth, name, array, entry[5]])
                self.current[key] = (id(value), len(self.values) - 1, _raw(value))
            else:
                self.full = True
            return
        array = _as_float_array(value)
        if array is None:
            return
        if filename is None:  # an input: watched for changes, never reported as computed
            self.values.append([None, 0, 0, name, array, len(self.values)])
            self.current[key] = (id(value), len(self.values) - 1, _raw(value))
            return
        if len(self.values) >= MAX_VALUES:
            self.full = True
            return
        self.values.append([filename, line, depth, name, array, len(self.values)])
        if key is not None:
            self.current[key] = (id(value), len(self.values) - 1, _raw(value))


def traced(invoke, args, is_student_file, returned=None):
    """Call ``invoke(args)`` under the recorder; return the recorded values (even when the call
    raises: what was computed before the error is still what it was). What the call returned
    is appended to ``returned`` (a list), so that the grader can check that the traced run
    computed what the graded run did: code that behaves otherwise when traced gets no line."""
    recorder = Recorder(is_student_file)
    gettrace = sys.gettrace
    previous = gettrace()
    # the call sees what the graded call saw: no tracer (code that looks for one, to show the
    # tracer a decoy line, takes the graded path; what else differs, the grader checks)
    sys.gettrace = lambda: previous
    sys.settrace(recorder.on_call)
    try:
        result = invoke(args)
        if returned is not None:
            returned.append(result)
    except BaseException:  # noqa: BLE001, S110 - the traced rerun's errors are the first run's
        pass
    finally:
        sys.settrace(previous)
        sys.gettrace = gettrace
    return [v for v in recorder.values if v[0] not in (None, CHANGED_INPUT)]
