"""How much memory one call allocates at its peak: the ``tiling`` check's measurement (SPEC,
"What tiled means for grading"). Standard library only: the sandbox's child loads it by path,
the notebook's in-process grading imports it.

NumPy reports its buffers to ``tracemalloc``, so the peak of the allocations traced during the
call is what NumPy code held at once. Torch (and other frameworks) allocate outside it: for
them the growth of the peak resident set during the call is read instead (Linux: writing 5 to
/proc/self/clear_refs resets VmHWM), where the system allows it; where it does not, that part
is ``None`` and the check says it could not measure.
"""

import sys
import time
import tracemalloc

#: frameworks whose arrays tracemalloc does not see
UNTRACED_FRAMEWORKS = ("torch", "jax", "tensorflow")


def _peak_resident_bytes():
    """VmHWM of this process in bytes, or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak_resident():
    """Reset VmHWM to the current resident set; False where the system does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def measure(call, frameworks=None, resident=True):
    """Call ``call()`` once and return (what it returned, the measurement): ``traced_peak`` (bytes
    traced by tracemalloc at the peak, above what was traced before), ``resident_growth`` (bytes
    the peak resident set grew by, or None), ``frameworks`` (the untraced ones the code uses:
    ``frameworks`` if given, else those loaded in this process) and ``seconds``.

    Code that uses such a framework is measured only where the resident set can be (``resident``
    and the system allows it); elsewhere it is not called at all (what it returns is then None)
    and the measurement says so, the same in the sandbox and in a notebook."""
    if frameworks is None:
        frameworks = [name for name in UNTRACED_FRAMEWORKS if name in sys.modules]
    resident_before = (_peak_resident_bytes() if resident and _reset_peak_resident()
                       else None)
    unmeasured = {"traced_peak": None, "resident_growth": None,
                  "frameworks": list(frameworks), "seconds": 0.0}
    if frameworks and resident_before is None:
        return None, unmeasured
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    try:
        returned = call()
        seconds = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    resident_after = _peak_resident_bytes() if resident_before is not None else None
    growth = (None if resident_before is None or resident_after is None
              else max(0, resident_after - resident_before))
    return returned, {**unmeasured, "traced_peak": max(0, peak - base),
                      "resident_growth": growth, "seconds": seconds}
