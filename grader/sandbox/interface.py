"""A course's interface, applied next to the student's code: the probe's canonical arguments
(NumPy arrays, SPEC section 1 conventions) become the course's (its parameter order, mask
convention, weight layout, batch layout, dtype and array type), the student's function or class
is called, and what it returns comes back in the canonical form (its outputs, by name).

Nothing here knows a task by its name: the grader sends each task's canonical call (its
arguments, defaults, outputs and sequences: ``registry.Canonical.as_dict``) with every request.

Shared by the sandbox's child (``worker.py`` loads this file by path, before any student code)
and by the notebook self-check. NumPy only; torch, TensorFlow or JAX are imported when the
interface asks for them (the submission has imported them already).
"""

import importlib.util
import inspect
import os

import numpy as np


def _sibling(name):
    """A file beside this one, loaded by path (the child imports nothing of the grader)."""
    where = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    found = importlib.util.spec_from_file_location(f"_ag_{name}", where)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


_rope_tables = _sibling("rope_tables")  # RoPE in two steps: build the tables, then apply them

_asarray = np.asarray
_ascontiguous = np.ascontiguousarray

PROJECTIONS = ("W_q", "W_k", "W_v", "W_o")


class InterfaceError(Exception):
    """The submission does not have what the course's interface declares (a class attribute, a
    callable): a ``wrong-signature`` error naming what was expected."""


def is_canonical(spec, task):
    """The grader sends an interface only when it is not SPEC's own (``Interface.canonical_for``
    decides, in the grader)."""
    return not spec


#: arguments some code reads whatever the task (None, or SPEC's default, when it has none)
_ABSENT = {"mask": None, "axis": -1, "m": None, "positions": None, "theta": None}


def _canonical(task, args):
    """The probe's arguments by name, with the task's defaults for those it leaves out."""
    values = dict(zip(task["arguments"], args))
    for name, value in (*task.get("defaults", ()), *_ABSENT.items()):
        values.setdefault(name, value)
    return values


#: batch layout -> how many leading axes the course's code takes ("any": as they come)
LEADING_AXES = {"one": 1, "heads": 2}


def _fold_leading(values, task, axes, mask_shape="full"):
    """The probe's leading axes made exactly ``axes`` (1: one batch axis; 2: (B, h)), unit ones
    added in front for fewer, the first ones folded for more; the shape to restore."""
    sequences = task.get("sequences")
    if not sequences:
        return None
    first = task["queries"]
    leading = values[first].shape[:-2]
    padded = (1,) * max(0, axes - len(leading)) + tuple(leading)
    cut = len(padded) - axes + 1
    folded = (int(np.prod(padded[:cut], dtype=np.int64)),) + padded[cut:]
    queries, keys = values[first], values[task["keys"]]
    for name in sequences:
        array = values[name]
        if array.shape[:-2] != leading:
            array = np.broadcast_to(array, leading + array.shape[-2:])
        values[name] = _ascontiguous(array).reshape(folded + array.shape[-2:])
    if queries is keys and values[first] is not values[task["keys"]]:
        values[task["keys"]] = values[first]  # self-attention: still one array, folded once
    mask = values.get("mask")
    if mask is not None:
        n, m = values[first].shape[-2], values[task["keys"]].shape[-2]
        if mask_shape == "broadcast" and all(size == 1 for size in mask.shape[:-2]):
            values["mask"] = _ascontiguous(np.broadcast_to(mask, mask.shape[:-2] + (n, m))
                                           ).reshape(n, m)  # (one matrix, broadcast by the code)
            return leading, axes
        values["mask"] = _ascontiguous(np.broadcast_to(mask, leading + (n, m))).reshape(
            folded + (n, m))
    return leading, axes


def _convert_mask(mask, convention, float_dtype):
    if mask is None or convention == "keep":
        return mask
    if convention == "block":
        return ~mask
    if convention == "float-keep":
        return mask.astype(float_dtype)
    if convention == "zero-blocks":
        return mask.astype(np.int64)
    if convention == "additive":
        return np.where(mask, 0.0, -np.inf).astype(float_dtype)
    if convention == "lengths":
        return mask.sum(axis=-1).astype(np.int64)
    return None  # "none": the course has no mask (masked probes are not sent)


def _framework(kind):
    if kind == "torch":
        import torch

        return lambda a: torch.from_numpy(_ascontiguous(a)) if isinstance(a, np.ndarray) else a
    if kind == "tensorflow":
        import tensorflow as tf

        return lambda a: tf.constant(a) if isinstance(a, np.ndarray) else a
    if kind == "jax":
        import jax.numpy as jnp

        return lambda a: jnp.asarray(a) if isinstance(a, np.ndarray) else a
    return lambda a: a


def course_arguments(spec, task, args):
    """(the course's positional arguments, how to restore the output's leading axes)."""
    values = _canonical(task, args)
    float_dtype = np.float32 if spec.get("dtype") == "float32" else np.float64
    for name, value in list(values.items()):
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            values[name] = value.astype(float_dtype, copy=False)
    back = None
    if spec.get("pairs") == "halves":
        # before the nn.Linear layout's transpose: columns are SPEC's outputs
        back = _to_halves(values, task)
    if spec.get("projections") == "linear":
        for name in PROJECTIONS:
            if name in values:
                values[name] = _ascontiguous(values[name].T)
    axes = LEADING_AXES.get(spec.get("batch", "any"))
    leading = _fold_leading(values, task, axes, spec.get("mask_shape")) if axes else None
    if back is not None:
        leading = back if leading is None else _then(leading, back)
    if spec.get("axis") is not None or spec.get("ndim"):  # (only a task with an axis has them)
        leading = _fixed_softmax_axis(values, spec.get("axis"), spec.get("ndim"))
    if spec.get("min_ndim") and values["x"].ndim < spec["min_ndim"]:
        lifted = _lifted_softmax_input(values, spec["min_ndim"])
        moved_back = leading
        leading = lifted if moved_back is None else (lambda a: moved_back(lifted(a)))
    if values.get("mask") is None and spec.get("mask_always") and "mask" in task["arguments"]:
        values["mask"] = _keep_everything(values, task)
    mask = values.get("mask")
    if mask is not None and spec.get("mask_shape") == "shared":
        mask = _ascontiguous(mask.reshape((-1,) + mask.shape[-2:])[0])  # the same for all
    values["mask"] = _convert_mask(mask, spec.get("mask", "keep"), float_dtype)
    values["valid_lens"] = values["mask"] if spec.get("mask") == "lengths" else None
    _derive(values, task)
    _token_input(values, spec)
    leading = _rope_tables.shape_input(spec, task, values, leading, restore)
    convert = _framework(spec.get("arrays", "numpy"))
    parameters = spec.get("parameters") or task["arguments"]
    if spec.get("rope_tables"):
        values.update(_rope_tables.placeholders(spec))  # (built in ``call``)
    return [convert(values[name]) for name in parameters], leading, values, convert


def halves_order(d):
    """The features of a (i, i + d/2) "rotate half" layout in SPEC's order: course feature c
    holds SPEC's feature order[c] (its first half the pairs' first features, 0, 2, 4, ...)."""
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def _to_halves(values, task):
    """A course whose RoPE pairs (i, i + d/2): its features are SPEC's, reordered so that each
    of its pairs holds one of SPEC's (2i, 2i+1) pairs. For RoPE itself (``rotary_pairs`` is
    "input") the input is reordered (and the answer put back); inside attention
    ("projections"), the columns of W_q and W_k within each head, when RoPE applies (the scores
    q . k do not change: both are reordered alike)."""
    where = task.get("rotary_pairs")
    if where == "input":
        rotated = task["sequences"][0]
        order = halves_order(values[rotated].shape[-1])
        values[rotated] = _ascontiguous(values[rotated][..., order])
        back = np.argsort(order)
        return lambda array: array if array is None or array.shape[-1] != len(order) \
            else array[..., back]
    if where != "projections" or values.get("theta") is None:
        return None
    heads = int(values["num_heads"])
    d_model = values["W_q"].shape[-1]
    d_k = d_model // heads
    columns = np.concatenate([h * d_k + halves_order(d_k) for h in range(heads)])
    for name in ("W_q", "W_k"):
        values[name] = _ascontiguous(values[name][:, columns])
    return None


def _token_input(values, spec):
    """A token tensor (B, n) standing for the length n (``tokens``), for code that builds a
    mask or an encoding from its input's shape (`get_subsequent_mask(seq)`,
    `forward(token_ids)`): ids from 1 up (0 is a padding id in many courses), or with
    ``features`` a (B, n, d_model) tensor of nonzero values."""
    length = values.get("n_positions", values.get("n"))
    if length is None:
        return
    table = spec.get("tokens") or {}
    batch, n = int(table.get("batch", 2)), int(length)
    ids = 1 + (np.arange(batch * n).reshape(batch, n) * 7 + 3) % 97
    if table.get("features"):
        d_model = int(values["d_model"])
        ids = 0.5 + ((ids[..., None] + np.arange(d_model)) % 13) / 13.0
    values["tokens"] = ids.astype(table.get("dtype", "int64"))


def _derive(values, task):
    """The sizes and inputs a course's code takes that the probe holds only implicitly."""
    first = next((values[name] for name in ("X_q", "Q", "X", "x") if name in values), None)
    if first is not None:
        values["d_model"] = int(first.shape[-1])
        # the longest input sequence: what a mask held in a buffer is sized by (block_size)
        keys = values.get("X_kv", values.get("K", first))
        values["seq_len"] = (max(int(first.shape[-2]), int(keys.shape[-2])) if first.ndim >= 2
                             else int(first.shape[-1]))
    values["d_k"] = int(values["Q"].shape[-1]) if "Q" in values else (
        values["d_model"] // int(values["num_heads"]) if "num_heads" in values else None)
    if "n_positions" in values:  # for a module that adds the encoding to its input
        values["zeros"] = np.zeros((1, int(values["n_positions"]), int(values["d_model"])))
        values["seq_len"] = int(values["n_positions"])
    if "n" in values:  # a mask's sizes
        values["seq_len"] = int(values["n"] if values["m"] is None else values["m"])
    if "output" in values and "output" in task["arguments"]:  # a softmax's output given
        with np.errstate(divide="ignore"):
            values["logits"] = np.log(values["output"])  # softmax(log Y) = Y
    if first is not None and "theta" in task["arguments"]:  # rotary positions
        n = int(first.shape[-2])
        values["positions_range"] = (np.arange(n) if values.get("positions") is None
                                     else _asarray(values["positions"]))
        _rope_tables.derive(values)
        values["rope_on"] = values.get("theta") is not None  # (a model whose theta is fixed)
    if values.get("X_kv") is not None:  # a key padding mask that pads nothing (True = padded)
        values["no_key_padding"] = np.zeros(values["X_kv"].shape[:-1], dtype=bool)


def _then(folded, back):
    """Put the leading axes back, then the features."""
    return lambda array: back(restore(array, folded))


def course_keywords(spec, values, convert):
    """The keyword arguments of the course's call: canonical ones by name, constants, None."""
    keywords = {name: convert(values[source]) for name, source in spec.get("keywords") or ()}
    keywords.update({name: value for name, value in spec.get("constants") or ()})
    keywords.update({name: None for name in spec.get("none") or ()})
    return keywords


def _keep_everything(values, task):
    """The mask of an unmasked input, for code that always applies one: every key kept."""
    first, keys = values[task["queries"]], values[task["keys"]]
    return np.ones(first.shape[:-2] + (first.shape[-2], keys.shape[-2]), dtype=bool)


def _lifted_softmax_input(values, min_ndim):
    """For softmax code that takes at least ``min_ndim`` axes: a test input with fewer is
    given leading axes of length 1 (a vector becomes one row), its axis counted anew; returns
    how to take them off the answer."""
    x = values["x"]
    added = min_ndim - x.ndim
    values["x"] = x.reshape((1,) * added + x.shape)
    axis = int(values.get("axis", -1))
    values["axis"] = axis + added if axis >= 0 else axis

    def back(array):
        if array is None or array.shape[:added] != (1,) * added:
            return array  # (a wrong shape is reported as it came)
        return array.reshape(array.shape[added:])

    return back


def _fixed_softmax_axis(values, axis, ndim):
    """For softmax code that normalises one fixed axis (``axis``: 0 or -1) and/or takes only
    matrices (``ndim`` = 2): the probe's axis is moved there (and the other axes folded into
    one); returns how to put the answer back."""
    x, wanted = values["x"], int(values.get("axis", -1)) % max(1, values["x"].ndim)
    target = -1 if axis is None else int(axis)
    moved = np.moveaxis(x, wanted, target)
    shape = moved.shape
    if ndim == 2:
        moved = moved.reshape((-1, shape[-1]) if target == -1 else (shape[0], -1))
    values["x"] = _ascontiguous(moved)
    values["axis"] = target if target == 0 else moved.ndim - 1

    def back(array):
        if array is None or array.shape != moved.shape:
            return array  # (a wrong shape is reported as it came)
        return np.moveaxis(array.reshape(shape), target, wanted)

    return back


def _attribute(root, path):
    """The object at a dotted ``path``: attributes, and items of plain lists, tuples and dicts
    (``heads.0.key.weight`` where ``heads`` is a Python list of head modules, not a
    ModuleList)."""
    target = root
    for part in path.split("."):
        target = _step(target, part, path)
    return target


def _step(target, part, path):
    if isinstance(target, (list, tuple)) and part.lstrip("-").isdigit() \
            and -len(target) <= int(part) < len(target):
        return target[int(part)]
    if isinstance(target, dict) and part in target:
        return target[part]
    if not hasattr(target, part):
        raise InterfaceError(f"the class has no attribute `{path}` (the course's interface "
                             f"sets the weights through it)")
    return getattr(target, part)


#: how deep plain containers of modules are looked into (a list of heads, a dict of lists),
#: and how many items of each (a list of numbers is not walked to its end)
MAX_CONTAINER_DEPTH = 3
MAX_CONTAINER_ITEMS = 256


def _held_modules(module):
    """The torch modules the object holds, itself first, also those kept in plain lists,
    tuples and dicts (which torch does not register: `self.heads = [Head(...) ...]`), so that
    each is cast to the probe's dtype and put in eval mode."""
    found, seen = [], set()

    def visit(value, depth):
        if value is None or id(value) in seen or depth > MAX_CONTAINER_DEPTH:
            return
        seen.add(id(value))
        if _is_torch_module(value):
            found.append(value)
            for name, held in vars(value).items():
                if name == "_modules":
                    for inner in held.values():
                        visit(inner, 0)
                elif not name.startswith("_") and isinstance(held, (list, tuple, dict)):
                    visit(held, depth + 1)
        elif isinstance(value, (list, tuple, dict)):
            items = list(value.values()) if isinstance(value, dict) else value
            for item in items[:MAX_CONTAINER_ITEMS]:
                visit(item, depth + 1)

    visit(module, 0)
    return found


def _is_torch_module(module):
    return any(k.__module__.startswith("torch.") and k.__name__ == "Module"
               for k in type(module).__mro__)


def _no_grad(module):
    """Run a call without autograd for a torch module, plainly otherwise."""
    if not _is_torch_module(module):
        return lambda call: call()
    import torch

    def run(call):
        with torch.no_grad():
            return call()

    return run


def _set_globals(cls, spec, values):
    """The module-level names the course's class reads, set where its methods look them up."""
    if not spec.get("globals"):
        return
    namespace = next((f.__globals__ for f in vars(cls).values() if hasattr(f, "__globals__")),
                     None)
    if namespace is None:
        raise InterfaceError(f"`{cls.__name__}` has no method of its own to read globals from")
    for name, source in spec["globals"]:
        namespace[name] = values[source] if isinstance(source, str) else source


def _constructed(source, values):
    """A constructor argument: a derived argument by name, a number, or (a table of them) an
    object with those attributes, such as nanoGPT's `config`."""
    if isinstance(source, str):
        return values[source]
    if isinstance(source, (list, tuple)):
        import types

        return types.SimpleNamespace(**{str(k): _constructed(v, values) for k, v in source})
    return source


def _build_module(cls, spec, values, head=None):
    """The course's class, constructed and given the probe's weights (biases zero), in eval
    mode and the probe's dtype; a class that is not a torch module gets NumPy arrays. With
    ``head``, the class is one head and gets that head's slice of each weight."""
    _set_globals(cls, spec, values)
    keywords = {}
    for name, source in spec.get("constructor") or ():
        keywords[name] = _constructed(source, values)
    keywords.update({name: value for name, value in spec.get("constructor_constants") or ()})
    try:
        module = cls(**keywords)
    except TypeError as exc:
        raise InterfaceError(f"`{cls.__name__}({', '.join(keywords)})` cannot be constructed: "
                             f"{exc}") from exc
    except NameError as exc:  # a module-level name the course's code reads (the GPT lecture's
        # block_size) that the interface does not set: the staff's to declare
        raise InterfaceError(f"`{cls.__name__}({', '.join(keywords)})` cannot be constructed: "
                             f"{exc}; if the course's code defines it at module level, the "
                             "interface's `globals` sets it") from exc
    if not _is_torch_module(module):
        return _set_numpy_weights(module, spec, values, head)
    import torch

    dtype = torch.float32 if spec.get("dtype") == "float32" else torch.float64
    # real tensors only: `module.to(dtype)` would also cast a complex buffer (RoPE's rotations
    # kept as complex numbers) to real, dropping its imaginary part
    held = _held_modules(module)
    for tensor in (t for m in held for t in (*m.parameters(recurse=False),
                                             *m.buffers(recurse=False))):
        if tensor.is_floating_point():
            tensor.data = tensor.data.to(dtype)
    with torch.no_grad():
        for path, source, data in _weights_by_path(spec, values, head):
            parameter = _attribute(module, path)
            if tuple(parameter.shape) != data.shape:
                raise InterfaceError(f"`{path}` has shape {tuple(parameter.shape)}; the course's "
                                     f"interface gives it {source} of shape {data.shape}")
            parameter.copy_(torch.from_numpy(_ascontiguous(data)))
        for path in spec.get("biases") or ():
            _attribute(module, path).zero_()
    for inner in held:
        inner.eval()
    return module


def _output_axis(spec):
    """The axis of a weight that runs over its outputs: nn.Linear keeps (out, in), applied as
    x @ W.T; SPEC's weights are (in, out). Fused q|k|v blocks and heads lie along it."""
    return 0 if spec.get("projections") == "linear" else 1


def _weight_blocks(spec, values, source, path=""):
    """The canonical weights ``source`` ("W_q" or a fused "W_q|W_k|W_v") as the course lays
    them out (the layout of ``path``'s fused weight, where the interface says one)."""
    blocks = [_asarray(values[name]) for name in source.split("|")]
    axis = _output_axis(spec)
    layout = dict(spec.get("fused_by_path") or ()).get(path, spec.get("fused"))
    if layout == "per-head" and len(blocks) > 1:
        heads = int(values["num_heads"])
        blocks = [part for head in zip(*(np.split(b, heads, axis=axis) for b in blocks))
                  for part in head]
    return np.concatenate(blocks, axis=axis)


def _weights_by_path(spec, values, one_head=None):
    """(attribute path, source, array) for each weight the interface sets. A path with ``{h}``
    is one module per head (the GPT lecture's `heads.{h}.query.weight`): head h gets its slice
    of the source, d_k wide; so does every path of a class that is head ``one_head``."""
    axis = _output_axis(spec)
    heads = int(values.get("num_heads") or 1)
    for path, source in spec.get("weights") or ():
        data = _weight_blocks(spec, values, source, path)
        if one_head is not None:
            yield path, f"{source} (head {one_head})", np.split(data, heads, axis=axis)[one_head]
        elif "{h}" not in path:
            yield path, source, data
        else:
            for head, part in enumerate(np.split(data, heads, axis=axis)):
                yield path.replace("{h}", str(head)), f"{source} (head {head})", part


def _set_numpy_weights(module, spec, values, head=None):
    for path, _source, data in _weights_by_path(spec, values, head):
        owner_path, _, name = path.rpartition(".")
        owner = _attribute(module, owner_path) if owner_path else module
        if isinstance(owner, dict):
            owner[name] = data.copy()
        else:
            setattr(owner, name, data.copy())
    for path in spec.get("biases") or ():
        target = _attribute(module, path)
        if isinstance(target, np.ndarray):
            target[...] = 0
    return module


def call(target, spec, task, args, binding_problem):
    """Call the student's ``target`` (function or class) on canonical ``args`` through the
    course's interface; return its raw result with its weights/output order made canonical,
    and the leading shape to restore. ``binding_problem(function, args)`` says why a call
    cannot bind (then an ``InterfaceError``)."""
    course_args, leading, values, convert = course_arguments(spec, task, args)
    if spec.get("rope_tables"):
        _rope_tables.prepare(target, spec, values, convert, InterfaceError)
        course_args = [convert(values[name]) for name in spec.get("parameters") or
                       task["arguments"]]
    keywords = course_keywords(spec, values, convert)
    if spec.get("factory"):
        target = _from_factory(target)
    if spec.get("kind") == "autograd":
        result = _autograd_call(target, spec, task, values, (course_args, keywords),
                                binding_problem)
        return result, leading
    if spec.get("kind") == "class":
        if not inspect.isclass(target):
            raise InterfaceError(f"`{getattr(target, '__name__', target)}` is not a class")
        if spec.get("one_head"):
            return _each_head(target, spec, values, course_args, keywords,
                              binding_problem), leading
        module = _build_module(target, spec, values)
        method = spec.get("method") or ""
        bound = _bound_method(target, module, method)
        result = _called(module, bound, method, course_args, keywords, binding_problem)
        if spec.get("gradients"):
            result = _backward_of_object(module, spec, task, values, course_args, convert,
                                         binding_problem)
    else:
        problem = binding_problem(target, course_args, keywords)
        if problem:
            raise InterfaceError(problem)
        result = target(*course_args, **keywords)
    if spec.get("rope_tables"):
        result = _rope_tables.read(result, spec, InterfaceError)
    if spec.get("returns") == "weights-output" and isinstance(result, (tuple, list)) \
            and len(result) >= 2:
        result = (result[1], result[0])
    elif spec.get("returns") == "dict":
        result = _from_dict(result, spec.get("return_keys") or ["output"])
    return result, leading


def _bound_method(target, module, method):
    """The method of the built object the interface calls (``__call__`` unless it names one)."""
    if method:
        if not callable(getattr(module, method, None)):
            raise InterfaceError(f"`{target.__name__}` has no method `{method}` (the "
                                 f"course's interface calls {target.__name__}().{method}(...))")
        return getattr(module, method)
    if callable(module):
        return module
    raise InterfaceError(f"`{target.__name__}` objects cannot be called as "
                         f"{target.__name__}()(...) (no __call__), as the course's "
                         "interface calls them; the interface's `method` names the "
                         "method to call instead")


def _called(module, bound, method, course_args, keywords, binding_problem):
    """The built object called on the course's arguments (without autograd for torch)."""
    problem = binding_problem(getattr(module, "forward", bound) if not method else bound,
                              course_args, keywords)
    if problem:
        raise InterfaceError(f"{method or 'forward'} {problem}")
    return _no_grad(module)(lambda: bound(*course_args, **keywords))


def _each_head(target, spec, values, course_args, keywords, binding_problem):
    """A class that is one attention head (``one_head``): built once per head with that head's
    slice of each weight, each called on the same input; their outputs side by side along the
    last axis, in head order, as the heads of multi-head attention are concatenated."""
    method = spec.get("method") or ""
    outputs = []
    for head in range(int(values.get("num_heads") or 1)):
        module = _build_module(target, spec, values, head)
        bound = _bound_method(target, module, method)
        output = _called(module, bound, method, course_args, keywords, binding_problem)
        outputs.append(output[0] if isinstance(output, (tuple, list)) and output else output)
    if all(_framework_kind(o) == "torch" for o in outputs):
        import torch

        return torch.cat(outputs, dim=-1)
    return np.concatenate([_asarray(o) for o in outputs], axis=-1)


def _framework_kind(value):
    return type(value).__module__.split(".")[0]


def _from_factory(factory):
    """The class a course's factory returns (CS336's adapters return a torch.autograd.Function
    subclass)."""
    name = getattr(factory, "__name__", factory)
    if inspect.isclass(factory) or not callable(factory):
        raise InterfaceError(f"`{name}` is not a function (the course's interface calls "
                             f"{name}() for the class)")
    made = factory()
    if not inspect.isclass(made):
        raise InterfaceError(f"`{name}()` returned a {type(made).__name__}, not a class (the "
                             "course's interface expects the class itself, not an instance)")
    return made


def _named_gradients(spec, task, parameters, gradients, read_attribute):
    """The task's outputs in order: the gradient of each argument the forward received (the
    sum over the parameters it came through: X passed as key and value gets both), or the
    attribute ``gradients_from`` names."""
    from_attributes = dict(spec.get("gradients_from") or ())
    named = []
    for output in task["outputs"]:
        if output in from_attributes:
            named.append(read_attribute(from_attributes[output]))
            continue
        argument = output[1:]
        parts = [g for name, g in zip(parameters, gradients) if name == argument]
        if not parts or any(part is None for part in parts):
            raise InterfaceError(f"no gradient of {argument} came back from the backward (the "
                                 f"course's interface reads {output} there)")
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        named.append(total)
    if spec.get("projections") == "linear":  # a weight's gradient laid out as its weight
        named = [g.T if name[1:] in PROJECTIONS and getattr(g, "ndim", 0) == 2 else g
                 for name, g in zip(task["outputs"], named)]
    return tuple(named)


def _backward_of_object(module, spec, task, values, forward_args, convert, binding_problem):
    """A stateful object's backward, called after its forward on the same object with the
    upstream gradient (CMU 11-785's `.backward(d_output)`): the gradients as the task names
    them."""
    method = spec.get("backward_method") or "backward"
    bound = getattr(module, method, None)
    name = type(module).__name__
    if not callable(bound):
        raise InterfaceError(f"`{name}` has no method `{method}` (the course's interface calls "
                             f"it after forward)")
    arguments = [convert(values[a]) for a in spec.get("backward_parameters") or ["grad_output"]]
    problem = binding_problem(bound, arguments)
    if problem:
        raise InterfaceError(f"{method} {problem}")
    returned = bound(*arguments)

    def read(path):
        value = _attribute(module, path)
        return value() if callable(value) else value

    listed = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if spec.get("gradients") == "inputs":
        parameters = spec.get("parameters") or task["arguments"]
        arrays = [p for p, a in zip(parameters, forward_args) if _is_array(a)]
        return _named_gradients(spec, task, arrays, listed, read)
    if not spec.get("gradients_from"):
        return returned
    from_attributes = dict(spec["gradients_from"])
    rest = iter(listed)
    return tuple(read(from_attributes[o]) if o in from_attributes else next(rest, None)
                 for o in task["outputs"])


def _is_array(value):
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _autograd_call(function_class, spec, task, values, given, binding_problem):
    """A torch.autograd.Function subclass, called as the course's code is: `.apply(...)` on
    tensors that require gradients; its outputs are what `.apply` returns, the tensors it saved
    (``saved_outputs``) and, with a backward, the `.grad` of its inputs after
    `output.backward(grad_output)`."""
    import torch

    name = getattr(function_class, "__name__", function_class)
    if not (inspect.isclass(function_class) and issubclass(function_class, torch.autograd.Function)):
        raise InterfaceError(f"`{name}` is not a torch.autograd.Function subclass (the course's "
                             f"interface calls {name}.apply(...))")
    course_args, keywords = given
    leaves = [a.detach().requires_grad_(True)
              if isinstance(a, torch.Tensor) and a.is_floating_point() else a
              for a in course_args]
    problem = binding_problem(function_class.forward, [None, *leaves], keywords)
    if problem:
        raise InterfaceError(f"forward {problem} (after ctx)")
    with torch.enable_grad():
        result = function_class.apply(*leaves, **keywords)
        output = result[0] if isinstance(result, (tuple, list)) else result
        saved = _saved_outputs(spec, task, values, output)
        if not spec.get("gradients"):
            return (output, *saved) if saved else result
        if not isinstance(output, torch.Tensor) or output.grad_fn is None:
            raise InterfaceError(f"`{name}.apply` returned no tensor that autograd can "
                                 "differentiate (is forward detaching its output?)")
        upstream = torch.as_tensor(values["grad_output"], dtype=output.dtype)
        output.backward(upstream)
    parameters = spec.get("parameters") or task["arguments"]
    grads = [leaf.grad if isinstance(leaf, torch.Tensor) else None for leaf in leaves]
    return _named_gradients(spec, task, parameters, grads, None)


def _saved_outputs(spec, task, values, output):
    """The outputs found among the tensors the Function saved for its backward, in the task's
    order; "per-query": the one of shape (the queries' shape without their last axis)."""
    rules = dict(spec.get("saved_outputs") or ())
    if not rules:
        return ()
    saved = getattr(getattr(output, "grad_fn", None), "saved_tensors", None)
    if saved is None:
        raise InterfaceError("the output has no saved tensors (does forward call "
                             "ctx.save_for_backward?)")
    found = []
    for name in (o for o in task["outputs"] if o in rules):
        shape = tuple(np.shape(values[task["queries"]])[:-1])
        matches = [t for t in saved if tuple(t.shape) == shape]
        if len(matches) != 1:
            raise InterfaceError(f"expected one saved tensor of shape {shape} ({name}, one value "
                                 f"per query) among ctx.save_for_backward's; found "
                                 f"{len(matches)}")
        found.append(matches[0])
    return tuple(found)


def _from_dict(result, keys):
    """The outputs, in the task's order, from a dict the course's code returns, by the
    declared keys (one per output; a key after the first may be missing: that output is then
    not returned)."""
    if not hasattr(result, "keys") or not hasattr(result, "__getitem__"):
        raise InterfaceError(f"returned a {type(result).__name__}; the course's interface "
                             f"expects a dict with the key {keys[0]!r}")
    if keys[0] not in result:
        raise InterfaceError(f"the returned dict has no key {keys[0]!r} (its keys: "
                             f"{', '.join(map(repr, list(result.keys())[:8]))})")
    # (any mapping-like object the course's code returns, not only a dict: no .get)
    return tuple(result[key] if key in result else None for key in keys)  # noqa: SIM401


def _as_float32(array):
    return array.astype(np.float32) if array is not None and array.dtype == np.float64 else array


def _squeezed(array, axes):
    """The answer without the leading axes of length 1 the course's code puts in front."""
    if array is None or not axes or array.shape[:axes] != (1,) * axes:
        return array
    return array.reshape(array.shape[axes:])


def restore(array, folded):
    """An output of the folded leading axes back to the probe's (``folded``: the probe's
    leading shape and how many axes the course's code took, or a function that puts it back)."""
    if array is None or folded is None:
        return array
    if callable(folded):
        return folded(array)
    leading, axes = folded
    return array.reshape(tuple(leading) + array.shape[axes:])


#: a mask a course's code returns, read in the convention its interface declares, as SPEC's
#: 1.0 (may attend) and 0.0 (blocked); NaN where a value means neither. (A course that
#: declares none is read as SPEC reads masks: boolean, 0/1 or additive.)
_BLOCKED_BELOW = -1e4


def _as_keep(keep, known=None):
    values = np.asarray(keep, dtype=np.float64)
    return values if known is None else np.where(known, values, np.nan)


READ_MASKS = {
    "block": lambda a: _as_keep(a == 0),
    "zero-blocks": lambda a: _as_keep(a != 0),
    "float-keep": lambda a: _as_keep(a == 1, (a == 0) | (a == 1)),
    "additive": lambda a: _as_keep(a == 0, (a == 0) | (a <= _BLOCKED_BELOW)),
}


def invoker(function, spec, task, to_arrays, binding_problem):
    """``invoke(args) -> {output name: array}``, plain arrays in canonical form, for a probe's
    canonical arguments: a direct call, or one through the course's interface. ``task`` is the
    task's canonical call (its outputs by name, in order)."""
    # (a plan that names no task: SPEC's first pair, the output and optionally the weights)
    outputs = tuple(task["outputs"]) if task else ("output", "weights")
    optional = tuple(task.get("optional_outputs", ())) if task else ("weights",)
    if is_canonical(spec, task):
        return lambda args: to_arrays(function(*args), outputs, optional)

    def invoke(args):
        result, leading = call(function, spec, task, args, binding_problem)
        named = {name: a if name[1:] in PROJECTIONS  # (a weight's gradient: no leading axes)
                 else restore(_squeezed(a, spec.get("squeeze") or 0), leading)
                 for name, a in to_arrays(result, outputs, optional).items()}
        if task.get("returns_mask") and spec.get("mask") in READ_MASKS:
            named[outputs[0]] = READ_MASKS[spec["mask"]](named[outputs[0]])
        if spec.get("dtype") == "float32":
            # a float32 course's inputs carry float32 rounding: judged as float32, whatever a
            # stray float64 constant promoted the result to
            named = {name: _as_float32(a) for name, a in named.items()}
        return named

    return invoke
