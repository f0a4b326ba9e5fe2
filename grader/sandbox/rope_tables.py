"""RoPE in two steps, in the child: "build the tables, then apply them", as most real RoPE is
written (Llama's ``precompute_freqs_cis`` + ``apply_rotary_emb``, Hugging Face's rotary embedding
+ ``apply_rotary_pos_emb``, XCS224N's ``precompute_rotary_emb`` + ``apply_rotary_emb``).

The assignment's function is the applier. The interface's ``rope_tables`` (checked by
``grader/registry.py``) names the builder, found beside the applier in the submission: it is
called (or, for a class, built and called) on the arguments the interface names, its tables go
to the applier (the rows at the probe's positions, all of them, or as built), the applier's
input is given the axes it takes, and one of the queries and keys it returns is read.

Loaded by ``interface.py`` from its file (the child imports nothing of the grader package).
NumPy only; the tables are the student's own objects, passed on as they come.
"""

import sys
import types

import numpy as np

#: the names under which the builder's tables reach the applier, by layout (registry's too)
TABLE_NAMES = {"complex": ("rope_table",), "stacked": ("rope_table",),
               "angles": ("rope_table",),
               "cos-sin": ("rope_cos", "rope_sin")}
#: extra rows a table is built with beyond the last position: an applier that does not cut the
#: table to its sequence (XCS224N's `rope_cache[:T]`) is caught
SPARE_ROWS = 3


def derive(values):
    """The builder's sizes: the probe's positions as a (1, n) batch (Hugging Face's
    position_ids) and the rows a table is built with."""
    positions = np.asarray(values["positions_range"], dtype=np.int64)
    values["positions_batch"] = positions[None, :]
    last = int(positions.max()) + 1 if positions.size else 0
    values["table_length"] = max(last, int(positions.size)) + SPARE_ROWS


def placeholders(spec):
    """The table names the applier's parameters may list, before the tables exist."""
    return dict.fromkeys(TABLE_NAMES[spec["rope_tables"].get("layout", "complex")])


def axes_of(spec):
    """The axes RoPE's input is given (``axes``, or ``rope_tables.axes`` for two steps)."""
    given = spec.get("axes") or "any"
    return given if given != "any" else (spec.get("rope_tables") or {}).get("axes", "any")


def shape_input(spec, task, values, leading, restore):
    """The rotated input given the axes the course's code takes, and its positions for every
    batch index (``positions_per_batch``); returns how to put the output back."""
    if "positions_range" not in values or not task.get("sequences"):
        return leading
    axes = axes_of(spec) if task.get("rotary_pairs") == "input" else "any"
    rotated = task["sequences"][0]
    values[rotated], axes_back = _with_axes(values[rotated], axes)
    shaped = values[rotated]
    batch = shaped.shape[:1] if axes != "any" else shaped.shape[:-2]
    positions = np.asarray(values["positions_range"])
    values["positions_per_batch"] = np.ascontiguousarray(
        np.broadcast_to(positions, tuple(batch) + positions.shape))
    if axes_back is None:
        return leading
    return lambda array: restore(axes_back(array), leading)


def prepare(target, spec, values, convert, error):
    """The tables built by the student's builder and put in ``values`` under their names."""
    tables = spec["rope_tables"]
    built = _build(_builder(target, tables["builder"], error), tables, values, convert)
    names = TABLE_NAMES[tables.get("layout", "complex")]
    parts = _named_tables(built, names, tables.get("layout", "complex"), tables["builder"],
                          error)
    rows = _rows(values, tables.get("rows", "positions"))
    if rows is not None:
        parts = [part[convert(rows)] for part in parts]
    values.update(zip(names, parts))


def _rows(values, rows):
    """The table's rows the applier gets, in order: those at the probe's positions
    ("positions"); or ("all") those followed by the rest of the table, so that row t is the
    t-th token's and the table is longer than the sequence (the whole table, as built, for
    positions 0 .. n-1); None: as built ("given": the builder took the positions)."""
    if rows == "given":
        return None
    positions = np.asarray(values["positions_range"], dtype=np.int64)
    if rows == "positions":
        return positions
    rest = np.arange(int(positions.max()) + 1 if positions.size else 0, values["table_length"])
    return np.concatenate([positions, rest])


def read(result, spec, error):
    """The output the grader reads: the rotated input, or the queries or the keys of the pair
    the applier returns."""
    which = spec["rope_tables"].get("read", "output")
    if which == "output":
        return result
    if not isinstance(result, (tuple, list)) or len(result) < 2:
        raise error(f"returned a {type(result).__name__}; the course's interface expects the "
                    "rotated queries and keys, (q, k)")
    return result[0 if which == "queries" else 1]


def _with_axes(array, axes):
    """``array`` (..., n, d) as the applier takes it: as it comes, (B, h, n, d) or (B, n, h, d)
    (the leading axes folded or padded with ones to two); the function that puts an output of
    that shape back."""
    if axes == "any":
        return array, None
    leading, (n, d) = array.shape[:-2], array.shape[-2:]
    padded = (1,) * max(0, 2 - len(leading)) + tuple(leading)
    first = int(np.prod(padded[:-1], dtype=np.int64))
    shaped = np.ascontiguousarray(array).reshape((first, padded[-1], n, d))
    if axes == "bnhd":
        shaped = np.ascontiguousarray(shaped.swapaxes(1, 2))

    def back(out):
        if out is None or tuple(out.shape) != shaped.shape:
            return out  # (a wrong shape is reported as it came)
        out = out.swapaxes(1, 2) if axes == "bnhd" else out
        return np.ascontiguousarray(out).reshape(tuple(leading) + (n, d))

    return shaped, back


def _builder(target, name, error):
    """The builder, from the namespace the applier was defined in."""
    namespace = getattr(target, "__globals__", None)
    if namespace is None and isinstance(target, type):
        namespace = next((f.__globals__ for f in vars(target).values()
                          if hasattr(f, "__globals__")), None)
    builder = (namespace or {}).get(name)
    if not callable(builder):
        raise error(f"the submission defines no `{name}` (the course's interface builds RoPE's "
                    f"tables with it, then calls `{getattr(target, '__name__', target)}`)")
    return builder


def _given(source, values, convert):
    """A builder's argument: a canonical or derived one by name, a number, or (a table) an
    object with those attributes, as Hugging Face's `config`."""
    if isinstance(source, str):
        return convert(values[source])
    if isinstance(source, dict):
        return types.SimpleNamespace(**{k: _given(v, values, convert) for k, v in source.items()})
    return source


def _build(builder, tables, values, convert):
    """What the builder returns: a function called on its arguments, or a class built with its
    constructor's and then called on them."""
    args = [_given(a, values, convert) for a in tables.get("arguments") or ()]
    keywords = {k: _given(v, values, convert) for k, v in (tables.get("keywords") or {}).items()}
    constants = dict(tables.get("constants") or {})  # (strings too: device = "cpu")
    if not tables.get("constructor") and not isinstance(builder, type):
        return _quietly(lambda: builder(*args, **keywords, **constants))
    made = {k: _given(v, values, convert) for k, v in (tables.get("constructor") or {}).items()}
    made.update(constants)
    module = builder(**made)
    if hasattr(module, "eval"):
        module.eval()
    return _quietly(lambda: module(*args, **keywords))


def _quietly(call):
    """A call without autograd where torch is in use (the tables are constants)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return call()
    with torch.no_grad():
        return call()


def _named_tables(built, names, layout, builder, error):
    """The builder's tables, one per name (the layout says how many)."""
    if len(names) == 1:
        return [built[0] if isinstance(built, (tuple, list)) and len(built) == 1 else built]
    if not isinstance(built, (tuple, list)) or len(built) != len(names):
        raise error(f"`{builder}` returned a {type(built).__name__}; the course's interface "
                    f"(layout = {layout!r}) expects {len(names)} tables, "
                    f"({', '.join(n.removeprefix('rope_') for n in names)})")
    return list(built)
