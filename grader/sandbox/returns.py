"""What a student's function returned, made into plain numeric arrays; and whether it can be called.

Shared by the sandbox's child (``worker.py`` loads this file by path, before any student code
runs, so the NumPy functions bound here are the real ones even if the submission patches NumPy
later) and by the notebook self-check. Standard library and NumPy only, and nothing that exists
only on Unix: the notebook check runs on students' own machines, Windows included.
"""

import inspect
import types

import numpy as np

MAX_ELEMENTS = 1 << 22
_array = np.array
_ndarray = np.ndarray
_contiguous = np.ascontiguousarray
_float64 = np.float64


class WrongReturn(Exception):
    """The function returned something that is not a numeric array (the message says what)."""


def plain_array(value):
    """A contiguous, numeric, plain ``ndarray`` copy of ``value`` (torch tensors included)."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # torch tensors, incl. requires_grad
        value = value.detach().cpu().numpy()
    array = _array(value, copy=True, subok=False)
    if type(array) is not _ndarray:
        array = array.view(_ndarray)
    if array.dtype.kind not in "biuf":
        raise WrongReturn(f"returned an array of dtype {array.dtype}, not numbers")
    if array.size > MAX_ELEMENTS or array.ndim > 16:
        raise WrongReturn(f"returned an array of shape {array.shape}, far too large")
    if array.dtype.kind == "f" and array.dtype.itemsize > 8:  # long double: judged as float64
        array = array.astype(_float64)
    elif not array.dtype.isnative:  # big-endian: the same numbers in this machine's order
        array = array.astype(array.dtype.newbyteorder("="))
    return _contiguous(array)


def to_arrays(value, outputs=("output", "weights"), optional=("weights",)):
    """Student return value -> {output name: plain numeric ndarray}, in the order of
    ``outputs`` (the task's, by name); those in ``optional`` may be left out (or None). A
    return of too few or too many arrays is a ``WrongReturn`` that names the ones expected."""
    if value is None:
        raise WrongReturn("returned None (is a `return` statement missing?)")
    if isinstance(value, (str, bytes, dict, set)):
        raise WrongReturn(f"returned a {type(value).__name__}, not an array")
    if isinstance(value, types.GeneratorType) or (
        hasattr(value, "__next__") and not hasattr(value, "__array__")
    ):
        raise WrongReturn("returned a generator or iterator, not an array")
    if isinstance(value, tuple):
        if not value:
            raise WrongReturn("returned an empty tuple")
        return _named(list(value), outputs, optional)
    if isinstance(value, list):
        required = [name for name in outputs if name not in optional]
        if len(required) > 1 and len(required) <= len(value) <= len(outputs):
            # a task of several outputs: [dQ, dK, dV] is three arrays, even where their
            # shapes agree and NumPy would stack them into one
            return _named(list(value), outputs, optional)
        try:
            return _named([plain_array(value)], outputs, optional)
        except (ValueError, TypeError):
            if value:
                return _named(list(value), outputs, optional)
            raise
    return _named([value], outputs, optional)


def _named(parts, outputs, optional):
    required = [name for name in outputs if name not in optional]
    given = len(parts)
    while given > 1 and parts[given - 1] is None:  # (output, None): no weights
        given -= 1
    if not len(required) <= given <= len(outputs):
        raise WrongReturn(f"returned {_count(given)}; expected {_expected(outputs, required)}")
    named = {}
    for name, part in zip(outputs, parts[:given]):
        if part is None and name in optional:
            continue
        named[name] = plain_array(part)
    return named


def _count(n):
    return "1 array" if n == 1 else f"{n} arrays"


def _expected(outputs, required):
    """"3: dQ, dK, dV", or "1 or 2: output, and optionally weights"."""
    extra = [name for name in outputs if name not in required]
    low, high = len(required), len(outputs)
    count = str(high) if low == high else f"{low} or {high}" if high == low + 1 \
        else f"{low} to {high}"
    names = ", ".join(required)
    if extra:
        names += f"{', and' if required else ''} optionally {', '.join(extra)}"
    return f"{count}: {names.lstrip(', ')}"


def check_binding(function, args, keywords=None):
    """Why ``function`` cannot take ``args`` positionally (and ``keywords`` by name), or None
    when it can. (Only how many arguments come, and their names, decide it: the answer is kept
    for the next call alike, as a run calls one function many times.)"""
    key = (id(function), len(args), tuple(keywords or ()))
    known = _bindings.get(key)
    if known is not None and known[0] is function:
        return known[1]
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    problem = None
    try:
        signature.bind(*args, **(keywords or {}))
    except TypeError as exc:
        named = f" and {', '.join(keywords)} by name" if keywords else ""
        problem = f"cannot be called with {len(args)} positional arguments{named}: {exc}"
    _bindings[key] = (function, problem)
    return problem


_bindings: dict = {}
