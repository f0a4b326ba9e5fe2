"""Literal fixes: the quoted line of a submission, rewritten so that one named mistake is gone.

A catalogue row (``reference.catalogue``) lists the rewrites that undo its mistake. Each rewrite
reads the one line a report quotes (``grader.core.locate``) and returns the code that replaces it,
in the student's own names and framework, or None when the line does not have the shape it knows:
then the report gives the row's fix sentence alone, never a guess. A rewrite may return several
lines (the quoted one kept and a line added after it).

This is wording, not diagnosis: the mistake was named from what the code computed; the rewrite
only decides how to say the fix in the student's code. ``tests/test_fixes.py`` applies every
rewrite to fixtures with that mistake and grades them again: each must come out without it and
without any new one.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: one operand of ``/`` or ``*``: a dotted name with calls and subscripts, a parenthesised
#: expression (two levels), or a number; with an optional power
_PAREN = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
_ATOM = (rf"(?:[A-Za-z_][\w.]*(?:{_PAREN})?(?:\[[^\]]*\])*(?:\.[A-Za-z_]\w*(?:{_PAREN})?)*"
         rf"|{_PAREN}|\d+(?:\.\d*)?(?:e-?\d+)?)")
_OPERAND = rf"{_ATOM}(?:\s*\*\*\s*-?{_ATOM})?"
_LAST_DIVISION = re.compile(rf"^(?P<head>.*)/\s*(?P<d>{_OPERAND})(?P<tail>[^/]*)$")
_LAST_PRODUCT = re.compile(rf"^(?P<head>.*[^*])\*\s*(?P<d>{_OPERAND})(?P<tail>[^*]*)$")
_ASSIGNMENT = re.compile(r"^(?P<lhs>[A-Za-z_][\w.]*(?:\[[^\]]*\])?)\s*=\s*(?P<rhs>[^=].*)$")
_AUGMENTED = re.compile(r"^(?P<lhs>[A-Za-z_][\w.]*)\s*(?P<op>[-+*/@]|//|\*\*)=\s*(?P<rhs>.+)$")
_MODULES = frozenset({"np", "numpy", "torch", "tf", "jnp", "jax", "math", "F", "nn", "self",
                      "scipy", "special", "lax"})


@dataclass(frozen=True)
class Context:
    """What a rewrite may use besides the line: whether the task is a softmax on its own (over
    the caller's axis), the stage the line computes, the framework the code is written in, and
    the student's names of the canonical arguments (e.g. {"mask": "attn_mask", "W_o": "W_o"};
    empty when the interface is a course's)."""

    softmax_alone: bool
    stage: str
    dialect: str = "numpy"
    names: Mapping[str, str] = field(default_factory=dict)
    #: the code's own names of the running quantities of a tiled forward, as the traced values
    #: show them held when the quoted line runs ({"rescale": "alpha", "rescale_column":
    #: "alpha[..., None]", "running_max": "m_i", "running_sum": "l_i", "running_sum_column":
    #: "l_i[..., None]"}); empty elsewhere
    held: Mapping[str, str] = field(default_factory=dict)

    @property
    def axis(self) -> str:
        """The axis a softmax normalises, as the code should say it."""
        return self.names.get("axis", "axis") if self.softmax_alone else "-1"

    def keep(self) -> str:
        """``axis=..., keepdims=True`` in this framework's words."""
        return f"dim={self.axis}, keepdim=True" if self.dialect == "torch" else \
            f"axis={self.axis}, keepdims=True"

    def module(self) -> str:
        return {"torch": "torch", "jax": "jnp", "tf": "tf"}.get(self.dialect, "np")

    def blocked(self, scores: str, mask: str) -> str:
        """The scores with the keys the (True = may attend) mask blocks set to -1e9."""
        if self.dialect == "torch":
            return f"{scores}.masked_fill(~{mask}, -1e9)"
        if self.dialect == "tf":
            return f"tf.where({mask}, {scores}, -1e9)"
        return f"{self.module()}.where({mask}, {scores}, -1e9)"

    def row_max(self, x: str) -> str:
        if self.dialect == "torch":
            return f"{x}.amax(dim={self.axis}, keepdim=True)"
        if self.dialect == "tf":
            return f"tf.reduce_max({x}, axis={self.axis}, keepdims=True)"
        return f"{x}.max({self.keep()})"

    def row_sum(self, x: str) -> str:
        if self.dialect == "tf":
            return f"tf.reduce_sum({x}, axis={self.axis}, keepdims=True)"
        return f"{x}.sum({self.keep()})"

    def swap_last(self, x: str) -> str:
        if self.dialect == "tf":
            return f"tf.linalg.matrix_transpose({x})"
        return f"{x}.swapaxes(-1, -2)"


Rewrite = Callable[[str, Context], "str | None"]


def dialect(line: str, source: str) -> str:
    """The framework a line is written in: from the line's own calls, else the file's imports."""
    for text in (line, source):
        if re.search(r"\btorch\.|\.masked_fill\b|\bF\.", text):
            return "torch"
        if re.search(r"\btf\.", text):
            return "tf"
        if re.search(r"\bjnp\.", text):
            return "jax"
        if re.search(r"\bnp\.", text):
            return "numpy"
    return "numpy"


def _split_comment(line: str) -> tuple[str, str]:
    """The code of a line and its trailing comment (with the spaces before it)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                start = token.start[1]
                code = line[:start].rstrip()
                return code, line[len(code):]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return line, ""


def _first_array(expression: str) -> str | None:
    """The first name an expression reads as an array (not a module, not a called function)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(expression).readline)
                  if t.type in (tokenize.NAME, tokenize.OP)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    for i, token in enumerate(tokens):
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        before = tokens[i - 1].string if i else ""
        if (token.type == tokenize.NAME and token.string not in _MODULES and before != "."
                and after != "(" and token.string.isidentifier()
                and token.string not in ("True", "False", "None", "for", "in", "if", "else")):
            return token.string
    return None


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at its commas outside brackets (a call's arguments, a tuple's items)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text.strip():
        parts.append(text[start:].strip())
    return parts


def _code_only(rewrite: Rewrite, alone: bool = True) -> Rewrite:
    """Rewrite the code of the line, keeping its comment; None if the result is not Python.
    ``alone=False``: the rewrite fixes only its part of a mistake written on several lines, and
    is offered only beside the fix of the row's other lines (``Misconception.also``)."""
    def on_code(line: str, context: Context) -> str | None:
        code, comment = _split_comment(line)
        new = rewrite(code, context)
        if new is None or new == code:
            return None
        lines = new.split("\n")
        lines[0] += comment
        new = "\n".join(lines)
        try:
            compile(_as_statement(new), "<fix>", "exec")
        except SyntaxError:
            return None
        return new
    on_code.__name__ = rewrite.__name__
    on_code.alone = alone  # type: ignore[attr-defined]
    return on_code


def _as_statement(code: str) -> str:
    """Code of a function body, compilable on its own (a ``return`` wrapped in a function)."""
    return "def _f():\n" + "\n".join("    " + line for line in code.split("\n"))


# --- row sums ----------------------------------------------------------------------------------

#: a sum given an axis: ``x.sum(axis=-1)``, ``np.sum(x, axis=-1)``, ``torch.sum(x, dim=-1)``
_SUM_CALL = re.compile(r"(?P<call>\b(?:np|jnp|torch)\.sum\(|\.sum\()"
                       r"(?P<args>[^()]*(?:\([^()]*\)[^()]*)*)\)")


def _keep_summed_axis(code: str, context: Context) -> str | None:
    """A sum over an axis that drops it -> the same sum keeping it (``keepdims=True``; torch's
    ``keepdim=True``), so that it broadcasts against its own rows."""
    keep = "keepdim=True" if context.dialect == "torch" else "keepdims=True"

    def kept(match: re.Match[str]) -> str:
        args = match["args"]
        if "keep" in args or not re.search(r"\b(?:axis|dim)\s*=", args):
            return match.group(0)
        return f"{match['call']}{args}, {keep})"

    return _SUM_CALL.sub(kept, code)


# --- transposed factors --------------------------------------------------------------------------

#: the first factor of the line's product: ``dV = P @ dO``, ``dK = np.matmul(dS, Q)``
_FIRST_FACTOR = (re.compile(r"^(?P<head>[^=]*=\s*)(?P<x>[A-Za-z_][\w.]*)(?P<tail>\s*@)"),
                 re.compile(r"^(?P<head>[^=]*=\s*(?:np|jnp|torch)\.matmul\(\s*)"
                            r"(?P<x>[A-Za-z_][\w.]*)(?P<tail>\s*,)"))


def _transpose_first_factor(code: str, context: Context) -> str | None:
    """``P @ dO`` -> ``P.swapaxes(-1, -2) @ dO``: the product of a gradient that needs the
    transpose of its first factor (dV = P^T dO, dK = dS^T Q)."""
    for pattern in _FIRST_FACTOR:
        match = pattern.match(code)
        if match:
            return (f"{match['head']}{context.swap_last(match['x'])}{match['tail']}"
                    f"{code[match.end():]}")
    return None


# --- the softmax's weighted row sum --------------------------------------------------------------

#: a sum of one plain name: ``np.sum(dP, axis=-1)``, ``torch.sum(g, dim=-1)``, ``dP.sum(-1)``
_SUM_OF_NAME = re.compile(r"(?P<call>\b(?:np|jnp|torch)\.sum\(\s*)(?P<x>[A-Za-z_]\w*)(?=\s*[,)])"
                          r"|(?<![\w.])(?P<owner>[A-Za-z_]\w*)\.sum\(")
#: a name that multiplies something on the line: ``P * (...)``
_MULTIPLIER = re.compile(r"(?<![\w.*])(?P<y>[A-Za-z_]\w*)\s*\*(?!\*)")


def _weight_the_sum(code: str, context: Context) -> str | None:
    """``dP.sum(axis=-1, ...)`` -> ``(P * dP).sum(axis=-1, ...)``: the sum the softmax's gradient
    subtracts, weighted by the probabilities, named as the line multiplies by them (``P * (dP -
    ...)``) or, in softmax_backward, as the student names its ``output`` argument."""
    if context.stage not in ("rowsum", "dS"):
        return None
    match = _SUM_OF_NAME.search(code)
    if match is None:
        return None
    summed = match["x"] or match["owner"]
    multipliers = [m["y"] for m in _MULTIPLIER.finditer(code)
                   if m["y"] != summed and m["y"] not in _MODULES]
    probabilities = multipliers[0] if multipliers else context.names.get("output")
    if probabilities is None or probabilities == summed:
        return None
    if match["x"]:
        return (f"{code[:match.start('x')]}{probabilities} * {summed}"
                f"{code[match.end('x'):]}")
    return f"{code[:match.start()]}({probabilities} * {summed}).sum({code[match.end():]}"


#: ``x = a * b`` or ``return a * b``, a and b plain operands
_PRODUCT_OF_TWO = re.compile(
    rf"^(?P<head>(?:[^=]*[^=!<>+\-*/]=|return)\s*)(?P<a>{_ATOM})\s*\*\s*(?P<b>{_ATOM})\s*$")
#: ``x = g * p * (1 - p)`` or ``return g * p * (1 - p)``: the diagonal of the Jacobian
_DIAGONAL_TIMES = re.compile(
    rf"^(?P<head>(?:[^=]*[^=!<>+\-*/]=|return)\s*)(?P<g>{_ATOM})\s*\*\s*(?P<p>{_ATOM})\s*\*\s*"
    r"\(\s*1(?:\.0?)?\s*-\s*(?P=p)\s*\)\s*$")


def _gradient_first(a: str, b: str) -> tuple[str, str] | None:
    """(the upstream gradient, the probabilities) of a product of the two, told by the
    gradient's name (``dP``, ``d_out``, ``grad_y``); None when the names do not tell."""
    def is_gradient(name: str) -> bool:
        bare = name.split(".")[-1].split("[")[0].lower()
        return bare.startswith(("d", "grad", "g_")) or bare in ("g", "delta")

    if is_gradient(a) != is_gradient(b):
        return (a, b) if is_gradient(a) else (b, a)
    return None


def _softmax_vjp(head: str, gradient: str, probabilities: str, context: Context) -> str:
    weighted = context.row_sum(f"({probabilities} * {gradient})")
    return f"{head}{probabilities} * ({gradient} - {weighted})"


def _full_jacobian_of_product(code: str, context: Context) -> str | None:
    """``dS = P * dP`` -> ``dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))``: the
    softmax's Jacobian-vector product with the weighted row sum it leaves out."""
    if context.stage not in ("dS", "output"):
        return None
    match = _PRODUCT_OF_TWO.match(code)
    roles = match and _gradient_first(match["a"], match["b"])
    if not match or not roles:
        return None
    return _softmax_vjp(match["head"], *roles, context)


def _full_jacobian_of_diagonal(code: str, context: Context) -> str | None:
    """``dS = dP * P * (1 - P)`` -> ``dS = P * (dP - (P * dP).sum(axis=-1, keepdims=True))``:
    the whole Jacobian, not its diagonal alone."""
    if context.stage not in ("dS", "output"):
        return None
    match = _DIAGONAL_TIMES.match(code)
    if not match:
        return None
    return _softmax_vjp(match["head"], match["g"], match["p"], context)


# --- the multi-head backward's projections -------------------------------------------------------

#: ``dW = A.T @ B`` (``np.matmul(A.T, B)``), A and B operands with calls and subscripts
_TRANSPOSED_PRODUCT = (
    re.compile(rf"^(?P<head>[^=]*=\s*)(?P<a>{_ATOM})\.T\s*@\s*(?P<b>{_ATOM})(?P<tail>\s*)$"),
    re.compile(rf"^(?P<head>[^=]*=\s*(?:np|jnp|torch)\.matmul\(\s*)(?P<a>{_ATOM})\.T\s*,\s*"
               rf"(?P<b>{_ATOM})(?P<tail>\s*\)\s*)$"))
#: an einsum's subscripts: ``np.einsum("ni,nj->ji", ...)``
_EINSUM = re.compile(r"(?P<call>\b(?:np|jnp|torch)\.einsum\(\s*)(?P<q>[\"'])(?P<inputs>[^\"'>]*)"
                     r"->(?P<output>[^\"']*)(?P=q)")


def _input_first(code: str, context: Context) -> str | None:
    """A weight's gradient dY^T X -> X^T dY: ``dY.T @ X`` -> ``X.T @ dY``, or an einsum's two
    output indices swapped (``->ji`` -> ``->ij``)."""
    if not context.stage.startswith("dW"):
        return None
    for pattern in _TRANSPOSED_PRODUCT:
        match = pattern.match(code)
        if match:
            return (f"{match['head']}{match['b']}.T"
                    f"{' @ ' if '@' in code else ', '}{match['a']}{match['tail']}")
    match = _EINSUM.search(code)
    if match and re.fullmatch(r"\w\w", match["output"]):
        return (f"{code[:match.start('output')]}{match['output'][::-1]}"
                f"{code[match.end('output'):]}")
    return None


#: the right factor of a product, a plain name not transposed yet: ``dY @ W`` (not ``W.T``)
_RIGHT_FACTOR = re.compile(r"@\s*(?P<w>[A-Za-z_]\w*)\b(?![.(\[\w])")
_MATMUL_RIGHT = re.compile(r"(?P<call>\b(?:np|jnp|torch)\.matmul\()(?P<x>[^(),]+),\s*"
                           r"(?P<w>[A-Za-z_]\w*)\s*\)")


def _transpose_weight(code: str, context: Context) -> str | None:
    """An input's gradient dY W -> dY W^T: ``dY @ W`` -> ``dY @ W.T`` for each product on the
    line, or, in an einsum, the weight's indices swapped where they are (contracted, output):
    ``"...nj,ji->...ni"`` -> ``"...nj,ij->...ni"``."""
    if context.stage not in ("dC", "dC_heads", "dX_q", "dX_kv"):
        return None
    new = _RIGHT_FACTOR.sub(lambda m: f"@ {m['w']}.T", code)
    new = _MATMUL_RIGHT.sub(lambda m: f"{m['call']}{m['x']}, {m['w']}.T)", new)
    if new != code:
        return new
    return _einsum_weight_swapped(code, context)


def _einsum_weight_swapped(code: str, context: Context) -> str | None:
    """An einsum that multiplies by one of the weights (the student's names of W_q ... W_o)
    as (contracted index, output index): its indices swapped."""
    match = _EINSUM.search(code)
    weights = {context.names[w] for w in ("W_q", "W_k", "W_v", "W_o") if w in context.names}
    if match is None or not weights:
        return None
    inputs = match["inputs"].split(",")
    operands = _top_level_parts(_call_rest(code[match.end():]).lstrip(" ,"))
    if len(operands) != len(inputs):
        return None
    for number, (indices, operand) in enumerate(zip(inputs, operands)):
        indices = indices.strip()
        others = "".join(inputs[:number] + inputs[number + 1:])
        if operand in weights and len(indices) == 2 and indices[0] in others \
                and indices[0] not in match["output"] and indices[1] in match["output"]:
            inputs[number] = inputs[number].replace(indices, indices[::-1])
            return (f"{code[:match.start('inputs')]}{','.join(inputs)}"
                    f"{code[match.end('inputs'):]}")
    return None


def _call_rest(text: str) -> str:
    """The rest of a call's arguments: ``text`` up to the bracket that closes the call."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return text[:i]
    return text


#: a reshape's or a view's call
_RESHAPE_CALL = re.compile(r"\.(?:reshape|view)\(")
#: an axis swap right before a merge's reshape, or right after a split's
_SWAP_BEFORE = re.compile(r"\.(?:swapaxes|transpose|permute|mT)\b(?:\([^()]*\))?\s*$")
_SWAP_AFTER = re.compile(r"^(?:(?:[^()]|\([^()]*\))*)\)\s*\.(?:swapaxes|transpose|permute)\(")


def _undo_heads_steps(code: str, context: Context) -> str | None:
    """The backward's head steps as the forward's: dC split with a reshape to (..., n, h, d_k)
    and a swap of the head and token axes, each head's gradient merged with the swap back
    before its reshape. A line that already swaps there is left as it is."""
    match = _RESHAPE_CALL.search(code)
    if match is None:
        return None
    if context.stage == "dC_heads":
        if _SWAP_AFTER.match(code[match.end():]):
            return None
        return _split_then_transpose(code, context)
    if context.stage in ("dQ_merged", "dK_merged", "dV_merged"):
        if _SWAP_BEFORE.search(code[:match.start()]):
            return None
        swap = ".transpose(-2, -3)" if context.dialect == "torch" else ".swapaxes(-2, -3)"
        return f"{code[:match.start()]}{swap}.reshape({code[match.end():]}"
    return None


#: a gradient's name that says it is the keys' or the values' (dK, dk, d_v, grad_k, dV_heads)
_ROLE_NAME = re.compile(r"^(?P<pre>d_?|grad_?)(?P<role>[kKvV])(?P<post>(?:_\w*)?)$")


def _other_path(expression: str, names: Mapping[str, str], role: str) -> str | None:
    """``expression`` (the ``role`` path of dX_kv: "k" or "v") written for the other path: its
    weight and its gradient's name swapped (``dK @ W_k.T`` -> ``dV @ W_v.T``)."""
    other = "v" if role == "k" else "k"
    weight, other_weight = names[f"W_{role}"], names[f"W_{other}"]
    swapped = {weight: other_weight}

    def renamed(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in swapped:
            return swapped[token]
        name = _ROLE_NAME.match(token)
        if name is None or name["role"].lower() != role:
            return token
        letter = other.upper() if name["role"].isupper() else other
        return f"{name['pre']}{letter}{name['post']}"

    new = re.sub(r"(?<![\w.])[A-Za-z_]\w*", renamed, expression)
    changed = [a != b for a, b in zip(re.findall(r"\w+", expression), re.findall(r"\w+", new))]
    return new if sum(changed) >= 2 else None


def _both_paths(code: str, context: Context) -> str | None:
    """dX_kv through one path -> through both: ``dX_kv = dK @ W_k.T`` -> ``dX_kv = dK @ W_k.T +
    dV @ W_v.T`` (the other path written as the line writes its own, in the student's names)."""
    names = context.names
    match = _ASSIGNMENT.match(code)
    if context.stage != "dX_kv" or match is None or not {"W_k", "W_v"} <= names.keys():
        return None
    rhs = match["rhs"].strip()
    roles = [r for r in ("k", "v") if re.search(rf"(?<![\w.]){re.escape(names[f'W_{r}'])}\b",
                                                  rhs)]
    if len(roles) != 1 or len(_top_level_terms(rhs)) != 1:
        return None
    other = _other_path(rhs, names, roles[0])
    return None if other is None else f"{match['lhs']} = {rhs} + {other}"


def _top_level_terms(text: str) -> list[str]:
    """``text`` split at its ``+`` outside brackets."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "+" and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    terms.append(text[start:].strip())
    return terms


#: ``a = b = x + y + z``: two names given one value
_TWO_TARGETS = re.compile(r"^(?P<a>[A-Za-z_]\w*)\s*=\s*(?P<b>[A-Za-z_]\w*)\s*=\s*(?P<rhs>[^=].*)$")


def _own_paths(code: str, context: Context) -> str | None:
    """dX_q and dX_kv given the one total -> each its own paths: ``dX_q = dX_kv = dX_q + dX_k +
    dX_v`` -> ``dX_q, dX_kv = dX_q, dX_k + dX_v`` (the query's path is the term that reads
    W_q or a name of the queries' gradient; the target named for the keys and values gets the
    rest)."""
    match = _TWO_TARGETS.match(code)
    if match is None:
        return None
    terms = _top_level_terms(match["rhs"])
    w_q = re.escape(context.names.get("W_q", "W_q"))
    query = [t for t in terms if re.search(rf"(?<![\w.]){w_q}\b|(?<![\w.])(?:d_?|grad_?)"
                                           rf"(?:X_?)?[qQ](?:_\w*)?\b", t)]
    kv = [name for name in (match["a"], match["b"]) if re.search(r"kv|KV", name)]
    if len(terms) < 2 or len(query) != 1 or len(kv) != 1:
        return None
    q_name = match["b"] if kv[0] == match["a"] else match["a"]
    rest = " + ".join(t for t in terms if t is not query[0])
    return f"{q_name}, {kv[0]} = {query[0]}, {rest}"



# --- the tiled backward's scale -------------------------------------------------------------------

#: a tile's recomputed weights: ``exp(S - L...)``, the scores a name or a subscript
_EXP_OF_DIFFERENCE = re.compile(r"(?P<call>\bexp\(\s*)(?P<s>[A-Za-z_]\w*(?:\[[^\]]*\])?)"
                                r"(?P<rest>\s*-)")


def _scale_of(context: Context) -> str | None:
    """The forward's 1/sqrt(d) as a divisor, from the student's name of Q."""
    q = context.names.get("Q")
    return f"{q}.shape[-1] ** 0.5" if q else None


def _recompute_from_scaled(code: str, context: Context) -> str | None:
    """``P = np.exp(S - L_i)`` -> ``P = np.exp(S / Q.shape[-1] ** 0.5 - L_i)``: the weights
    recomputed from the scores L was computed with."""
    divisor = _scale_of(context)
    match = _EXP_OF_DIFFERENCE.search(code)
    if context.stage != "P" or divisor is None or match is None:
        return None
    return f"{code[:match.end('s')]} / {divisor}{code[match.end('s'):]}"


def _has_top_level_sum(text: str) -> bool:
    """Does ``text`` add or subtract outside brackets (after its first character)?"""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and i and ch in "+-":
            return True
    return False


#: ``x += term`` or ``x = term``, x a name with subscripts (a tile's rows of dQ)
_ADDED_TO = re.compile(
    r"^(?P<lhs>[A-Za-z_][\w.]*(?:\[[^\]]*\])*)\s*(?P<op>\+?=)\s*(?P<rhs>[^=].*)$")


#: a term that is scaled already (a right line beside the wrong one is quoted too)
_ALREADY_SCALED = re.compile(r"sqrt|\*\*\s*-?0?\.5|scale")


def _scale_the_contribution(code: str, context: Context) -> str | None:
    """``dQ_i += dS @ K_j`` -> ``dQ_i += dS @ K_j / Q.shape[-1] ** 0.5`` (and ``dQ = dS @ K``
    alike): a tile's contribution to dQ or dK, or the whole gradient, multiplied by the scale of
    the scores. A line that adds to what it already held (``dQ = dQ + ...``) is not one."""
    divisor = _scale_of(context)
    match = _ADDED_TO.match(code)
    if context.stage not in ("dQ", "dK") or divisor is None or match is None:
        return None
    rhs = match["rhs"].strip()
    if match["op"] == "=" and re.search(rf"(?<![\w.]){re.escape(match['lhs'])}(?![\w])", rhs):
        return None
    if _ALREADY_SCALED.search(rhs):
        return None
    term = f"({rhs})" if _has_top_level_sum(rhs) else rhs
    return f"{match['lhs']} {match['op']} {term} / {divisor}"

# --- the tiled forward's running quantities ------------------------------------------------

#: a running quantity's update: ``x = x + term`` or ``x += term``, x a name with subscripts
_RUNNING_UPDATE = re.compile(r"^(?P<lhs>[A-Za-z_]\w*(?:\[[^\]]*\])*)\s*(?:\+=\s*(?P<aug>.+)"
                             r"|=\s*(?P=lhs)\s*\+\s*(?P<rhs>.+))$")


def _rescaled_update(code: str, factor: str | None) -> str | None:
    """``x = x + term`` (or ``x += term``) -> ``x = factor * x + term``."""
    match = _RUNNING_UPDATE.match(code)
    if factor is None or match is None:
        return None
    term = match["aug"] or match["rhs"]
    return f"{match['lhs']} = {factor} * {match['lhs']} + {term.strip()}"


def _rescale_accumulator(code: str, context: Context) -> str | None:
    """``acc = acc + p @ V_j`` -> ``acc = alpha[..., None] * acc + p @ V_j``: the accumulator
    rescaled by the key tile's factor, under the code's own name for it."""
    if context.stage != "accumulator":
        return None
    return _rescaled_update(code, context.held.get("rescale_column"))


def _rescale_sum(code: str, context: Context) -> str | None:
    """``l = l + p.sum(axis=-1)`` -> ``l = alpha * l + p.sum(axis=-1)``."""
    if context.stage != "running_sum":
        return None
    return _rescaled_update(code, context.held.get("rescale"))


#: ``exp(a - b)`` (or ``exp2``) of two operands, or ``exp2((a - b) * c)`` (the base-2 form)
_EXP_OF_TWO = re.compile(rf"(?P<call>\bexp2?\(\s*\(?\s*)(?P<a>{_OPERAND})\s*-\s*"
                         rf"(?P<b>{_OPERAND})(?P<end>\s*\)(?:\s*[*/]\s*{_OPERAND}\s*\))?)")
#: ``1 / x`` (or ``1.0 / x``): a factor's inverse
_ONE_OVER = re.compile(rf"(?<![\w.)\]])1(?:\.0*)?\s*/\s*(?P<x>{_OPERAND})")


def _invert_rescale(code: str, context: Context) -> str | None:
    """The accumulator's factor turned the right way up: ``np.exp(m_new - m_old)`` ->
    ``np.exp(m_old - m_new)``, ``np.diag(1.0 / alpha)`` -> ``np.diag(alpha)`` (the line must
    hold exactly one such factor)."""
    if context.stage not in ("acc_factor", "accumulator"):
        return None
    exps, inverses = list(_EXP_OF_TWO.finditer(code)), list(_ONE_OVER.finditer(code))
    if len(exps) + len(inverses) != 1:
        return None
    if exps:
        match = exps[0]
        return (f"{code[:match.start()]}{match['call']}{match['b']} - {match['a']}"
                f"{match['end']}{code[match.end():]}")
    match = inverses[0]
    return f"{code[:match.start()]}{match['x']}{code[match.end():]}"


#: ``target = value``: a single assignment (the target a name with subscripts)
_SINGLE_ASSIGNMENT = re.compile(r"^(?P<lhs>[A-Za-z_]\w*(?:\[[^\]]*\])*)\s*=\s*(?P<rhs>[^=].*)$")


def _log(context: Context, x: str) -> str:
    return f"{context.module()}.log({x})"


def _add_log_sum(code: str, context: Context) -> str | None:
    """``L = m_i`` -> ``L = m_i + np.log(l_i)``: the running max alone completed to the
    logsumexp (the line must return the running max as the code holds it)."""
    match = _SINGLE_ASSIGNMENT.match(code)
    running_max, running_sum = context.held.get("running_max"), context.held.get("running_sum")
    if context.stage != "lse" or match is None or running_sum is None \
            or match["rhs"].strip() != running_max:
        return None
    return f"{match['lhs']} = {running_max} + {_log(context, running_sum)}"


def _add_running_max(code: str, context: Context) -> str | None:
    """``L = np.log(l_i)`` -> ``L = m_i + np.log(l_i)``: the running max added back (the line
    must take the log of the running sum as the code holds it, and not read the max)."""
    match = _SINGLE_ASSIGNMENT.match(code)
    running_max, running_sum = context.held.get("running_max"), context.held.get("running_sum")
    if context.stage != "lse" or match is None or running_max is None or running_sum is None:
        return None
    rhs = match["rhs"].strip()
    if rhs != _log(context, running_sum) or re.search(rf"\b{re.escape(running_max)}\b", rhs):
        return None
    return f"{match['lhs']} = {running_max} + {rhs}"


def _keep_scaled_max(code: str, context: Context) -> str | None:
    """``L = m_i / scale + np.log(l_i)`` -> ``L = m_i + np.log(l_i)``: a running max kept on
    the scaled scores is added to log l as it is, not unscaled (the line must add the running
    max, times or over one operand, to the log of the running sum, as the code holds them)."""
    match = _SINGLE_ASSIGNMENT.match(code)
    running_max, running_sum = context.held.get("running_max"), context.held.get("running_sum")
    if context.stage != "lse" or match is None or running_max is None or running_sum is None:
        return None
    log_sum = _log(context, running_sum)
    unscaled = re.fullmatch(rf"{re.escape(running_max)}\s*[*/]\s*{_OPERAND}\s*\+\s*"
                            rf"{re.escape(log_sum)}", match["rhs"].strip())
    return f"{match['lhs']} = {running_max} + {log_sum}" if unscaled else None


def _divide_by_running_sum(code: str, context: Context) -> str | None:
    """``O[..., i0:i1, :] = acc`` -> ``O[..., i0:i1, :] = acc / l_i[..., None]``: the
    accumulator divided by the running sum (the line must store a plain name)."""
    match = _SINGLE_ASSIGNMENT.match(code)
    column = context.held.get("running_sum_column")
    if context.stage != "output" or match is None or column is None \
            or not re.fullmatch(r"[A-Za-z_]\w*", match["rhs"].strip()):
        return None
    return f"{match['lhs']} = {match['rhs'].strip()} / {column}"


def _subtract_d(code: str, context: Context) -> str | None:
    """``dS = P * dP`` -> ``dS = P * (dP - D[..., i0:i1, None])``: the row term D the code
    computed (``held["D_column"]``: its rows of this query tile, as a column) subtracted from
    the gradient factor, told by its name."""
    match = _PRODUCT_OF_TWO.match(code)
    column = context.held.get("D_column")
    roles = _gradient_first(match["a"], match["b"]) if match else None
    if context.stage != "dS" or match is None or roles is None or column is None:
        return None
    gradient, probabilities = roles
    return f"{match['head']}{probabilities} * ({gradient} - {column})"


# --- scale -------------------------------------------------------------------------------------

def _divide_by_sqrt(code: str, context: Context) -> str | None:
    """``/ d_k`` -> ``/ d_k ** 0.5`` (and ``* scale`` with scale = 1/d_k -> ``* scale ** 0.5``)."""
    for pattern, op in ((_LAST_DIVISION, "/"), (_LAST_PRODUCT, "*")):
        match = pattern.match(code)
        if match and "**" not in match["d"]:
            operand = match["d"] if re.fullmatch(r"[\w.\[\]\-]+", match["d"]) else \
                f"({match['d']})"
            return f"{match['head'].rstrip()} {op} {operand} ** 0.5{match['tail']}"
    return None


def _flip_scale(code: str, context: Context) -> str | None:
    """The factor on the other side of the fraction: ``/ scale`` <-> ``* scale``."""
    match = _LAST_DIVISION.match(code)
    if match:
        return f"{match['head'].rstrip()} * {match['d']}{match['tail']}"
    match = _LAST_PRODUCT.match(code)
    if match:
        return f"{match['head'].rstrip()} / {match['d']}{match['tail']}"
    return None


def _divide_by_head_width(code: str, context: Context) -> str | None:
    """Whatever the scores are divided (or multiplied) by becomes sqrt of the query's last axis."""
    if context.stage != "scaled":
        return None
    match = _ASSIGNMENT.match(code) or re.match(r"^(?P<lhs>return)\s+(?P<rhs>.+)$", code)
    first = _first_array(match["rhs"]) if match else None
    if first is None:
        return None
    for pattern in (_LAST_DIVISION, _LAST_PRODUCT):
        found = pattern.match(code)
        if found:
            return f"{found['head'].rstrip()} / {first}.shape[-1] ** 0.5{found['tail']}"
    return None


def _add_scale(code: str, context: Context) -> str | None:
    """``scores = Q @ K.T`` -> ``scores = (Q @ K.T) / Q.shape[-1] ** 0.5``."""
    match = _ASSIGNMENT.match(code)
    first = _first_array(match["rhs"]) if match else None
    if match is None or first is None or context.stage != "scaled":
        return None
    return f"{match['lhs']} = ({match['rhs'].strip()}) / {first}.shape[-1] ** 0.5"


def _scale_inside_softmax(code: str, context: Context) -> str | None:
    """``w = softmax(s) / np.sqrt(d_k)`` -> ``w = softmax(s / np.sqrt(d_k))``."""
    match = re.match(rf"^(?P<lhs>.*=\s*)(?P<f>[\w.]+)\((?P<arg>[^()]*)\)\s*(?P<op>[/*])\s*"
                     rf"(?P<d>{_OPERAND})$", code)
    if match is None:
        return None
    return f"{match['lhs']}{match['f']}({match['arg']} {match['op']} {match['d']})"


# --- softmax -----------------------------------------------------------------------------------

_AXIS = re.compile(r"\b(?P<kw>axis|dim)\s*=\s*(?P<value>\(\s*-?\d+\s*(?:,\s*-?\d+\s*)*\)|-?\d+)")


def _right_axis(code: str, context: Context) -> str | None:
    """Every fixed axis on the line becomes the one the softmax must normalise."""
    if not _AXIS.search(code):
        return None
    return _AXIS.sub(lambda m: f"{m['kw']}={context.axis}", code)


def _per_row_totals(code: str, context: Context) -> str:
    """Every sum or max over the whole array -> over the softmax's axis, kept for broadcasting."""
    if _AXIS.search(code):
        return _AXIS.sub(lambda m: f"{m['kw']}={context.axis}", code)
    keep = context.keep()
    code = re.sub(r"\b(?P<f>np\.sum|np\.max|np\.amax|jnp\.sum|jnp\.max|torch\.sum)\("
                  r"(?P<x>[^(),]+)\)", lambda m: f"{m['f']}({m['x']}, {keep})", code)
    method = "amax" if context.dialect == "torch" else "max"
    return re.sub(r"\.(?P<f>sum|max|amax)\(\)",
                  lambda m: f".{method if m['f'] != 'sum' else 'sum'}({keep})", code)


def _row_max(code: str, context: Context) -> str | None:
    """The one maximum subtracted -> each row's own."""
    new = _per_row_totals(code, context)
    return new if new != code else None


def _row_softmax(code: str, context: Context) -> str | None:
    """One softmax over everything -> per row. Its exponentials were shifted by the global
    maximum, so the line must compute them too (else the fix leaves ``softmax-global-max``)."""
    new = _per_row_totals(code, context)
    return new if new != code and re.search(r"\bexp\(", code) else None


def _exponentiate_first(code: str, context: Context) -> str | None:
    """``w = s / s.sum(...)`` -> the exponentials of ``s`` (max subtracted), then that line.
    Only for a softmax on its own: in attention, what the code did to masked scores for its sum
    (often a fill of 0) would be wrong once exponentiated, a second line this one cannot see."""
    if not context.softmax_alone:
        return None
    match = re.match(r"^(?P<lhs>.*?)\b(?P<x>[A-Za-z_]\w*)\s*/\s*(?P<rest>.+)$", code)
    if match is None or not re.search(rf"\b{match['x']}\b", match["rest"]):
        return None
    x, exps = match["x"], "exps"
    shifted = f"{x} - {context.row_max(x)}"
    rest = re.sub(rf"\b{x}\b", exps, match["rest"])
    return f"{exps} = {context.module()}.exp({shifted})\n{match['lhs']}{exps} / {rest}"


def _then_normalise(code: str, context: Context) -> str | None:
    """``e = exp(...)`` kept, then ``e = e / e.sum(axis, keepdims)``."""
    match = _ASSIGNMENT.match(code)
    if match is None or "exp" not in match["rhs"]:
        return None
    lhs = match["lhs"]
    return f"{code}\n{lhs} = {lhs} / {context.row_sum(lhs)}"


def _subtract_row_max(code: str, context: Context) -> str | None:
    """``exp(s)`` -> ``exp(s - s.max(axis, keepdims))``."""
    match = re.search(r"(?P<f>\bexp)\(\s*(?P<x>[A-Za-z_][\w.]*)\s*\)", code)
    if match is None:
        return None
    x = match["x"]
    return code[:match.start()] + f"exp({x} - {context.row_max(x)})" + code[match.end():]


# --- what is blended, compared and projected ---------------------------------------------------

def _renamed(code: str, pairs: Mapping[str, str], only_after: str = "") -> str | None:
    """Rename whole-word names by ``pairs`` (upper/lower case as they are) right of the first
    ``only_after`` (the assignment's ``=``)."""
    cut = code.index(only_after) + 1 if only_after and only_after in code else 0
    head, tail = code[:cut], code[cut:]
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in pairs) + r")(?=\b|_)")
    new_tail = pattern.sub(lambda m: pairs[m.group(1)], tail)
    return head + new_tail if new_tail != tail else None


def _blend_values(code: str, context: Context) -> str | None:
    """``w @ K`` -> ``w @ V`` (k -> v, key -> value, keys -> values)."""
    match = re.search(r"@\s*(?P<k>K|k|keys?|Keys?)(?P<suffix>\w*)\b", code)
    if match is None:
        return None
    value = {"K": "V", "k": "v", "key": "value", "keys": "values", "Key": "Value",
             "Keys": "Values"}[match["k"]]
    return code[:match.start("k")] + value + code[match.end("k"):]


def _queries_first(code: str, context: Context) -> str | None:
    """``K @ Q^T`` -> ``Q @ K^T``: queries and keys change places."""
    pairs = {"K": "Q", "Q": "K", "k": "q", "q": "k", "key": "query", "query": "key",
             "keys": "queries", "queries": "keys"}
    return _renamed(code, pairs, "=")


def _transpose_keys(code: str, context: Context) -> str | None:
    """``Q @ K`` -> ``Q @ K.swapaxes(-1, -2)``."""
    match = re.search(r"(?:@\s*|matmul\(\s*[\w.]+\s*,\s*)(?P<k>[A-Za-z_][\w.]*)(?![\w.(\[])",
                      code)
    if match is None:
        return None
    return code[:match.start("k")] + context.swap_last(match["k"]) + code[match.end("k"):]


# --- masks -------------------------------------------------------------------------------------

_WHERE = re.compile(r"(?P<f>\b(?:np|jnp|torch|tf)\.where)\((?P<args>(?:[^()]|\([^()]*\))*)\)")


def _where_args(code: str) -> tuple[re.Match[str], list[str]] | None:
    match = _WHERE.search(code)
    if match is None:
        return None
    args = _top_level_parts(match["args"])
    return (match, args) if len(args) == 3 else None


def _swap_branches(code: str, context: Context) -> str | None:
    """``where(mask, -inf, s)`` -> ``where(mask, s, -inf)``; ``masked_fill(mask, v)`` ->
    ``masked_fill(~mask, v)``."""
    found = _where_args(code)
    if found is not None:
        match, (condition, a, b) = found
        return code[:match.start()] + f"{match['f']}({condition}, {b}, {a})" + code[match.end():]
    fill = re.search(r"\.masked_fill\(\s*(?P<m>[^,]+?)\s*,", code)
    if fill is None:
        return None
    mask = fill["m"]
    flipped = mask[1:].strip() if mask.startswith("~") else f"~{mask}"
    return code[:fill.start("m")] + flipped + code[fill.end("m"):]


def _fill_far_below(code: str, context: Context) -> str | None:
    """The fill value of the blocked scores becomes -1e9; ``s * mask`` becomes a ``where``."""
    found = _where_args(code)
    if found is not None:  # the fill is the branch that is a constant, not the scores
        match, (condition, a, b) = found
        constant = r"[-+]?\s*(?:\d[\w.]*|float\(.+\)|(?:np|math|torch)\.inf)"
        if re.fullmatch(constant, a) and not re.fullmatch(constant, b):
            a = "-1e9"
        elif re.fullmatch(constant, b):
            b = "-1e9"
        else:
            return None
        return code[:match.start()] + f"{match['f']}({condition}, {a}, {b})" + code[match.end():]
    fill = re.search(r"(?P<head>\.masked_fill\([^,]+,\s*)(?P<v>[^)]+)\)", code)
    if fill is not None:
        return code[:fill.start("v")] + "-1e9" + code[fill.end("v"):]
    mask = context.names.get("mask")
    product = re.search(rf"(?P<s>[A-Za-z_]\w*)\s*\*\s*{mask}\b", code) if mask else None
    if product is not None:
        return code[:product.start()] + context.blocked(product["s"], mask or "") + \
            code[product.end():]
    return None


def _apply_mask(code: str, context: Context) -> str | None:
    """The scores line kept, then the mask applied to its result when there is one."""
    mask = context.names.get("mask")
    match = _ASSIGNMENT.match(code)
    if mask is None or match is None:
        return None
    lhs = match["lhs"]
    return f"{code}\nif {mask} is not None:\n    {lhs} = {context.blocked(lhs, mask)}"


def _renormalise(code: str, context: Context) -> str | None:
    """Zeroed weights kept, then divided by their new row sum."""
    match = _ASSIGNMENT.match(code)
    if match is None:
        return None
    lhs = match["lhs"]
    return f"{code}\n{lhs} = {lhs} / {context.row_sum(lhs)}"


def _mask_as_given(code: str, context: Context) -> str | None:
    """``swapaxes(mask, -1, -2)`` / ``mask.T`` / ``mask.transpose(...)`` -> ``mask``."""
    mask = context.names.get("mask", "mask")
    new = re.sub(rf"\b(?:np|jnp)\.swapaxes\(\s*{mask}\s*,[^)]*\)", mask, code)
    new = re.sub(rf"\b{mask}\.(?:T|mT)\b|\b{mask}\.(?:transpose|swapaxes)\([^)]*\)", mask, new)
    return new if new != code else None


def _block_with_mask(code: str, context: Context) -> str | None:
    """``s + mask`` -> the scores with the blocked keys at -1e9."""
    mask = context.names.get("mask")
    match = re.search(rf"(?P<s>[A-Za-z_][\w.]*)\s*\+\s*{mask}\b", code) if mask else None
    if match is None or mask is None:
        return None
    return code[:match.start()] + context.blocked(match["s"], mask) + code[match.end():]


# --- multi-head ----------------------------------------------------------------------------------

_RESHAPE = re.compile(r"\.(?P<f>reshape|view)\((?P<args>(?:[^()]|\([^()]*\))*)\)")


def _split_then_transpose(code: str, context: Context) -> str | None:
    """``x.reshape(*b, h, n, d_k)`` -> ``x.reshape(*b, n, h, d_k).swapaxes(-2, -3)``."""
    match = _RESHAPE.search(code)
    if match is None:
        return None
    args = [a.strip() for a in match["args"].split(",")]
    if len(args) < 3:
        return None
    args[-3], args[-2] = args[-2], args[-3]
    swap = "transpose(-2, -3)" if context.dialect == "torch" else "swapaxes(-2, -3)"
    return code[:match.start()] + f".reshape({', '.join(args)}).{swap}" + code[match.end():]


def _transpose_then_merge(code: str, context: Context) -> str | None:
    """``x.reshape(*b, n, d_model)`` -> ``x.swapaxes(-2, -3).reshape(*b, n, d_model)``."""
    match = re.search(r"(?P<x>[A-Za-z_]\w*)(?P<f>\.reshape|\.view)\(", code)
    if match is None:
        return None
    swap = ".transpose(-2, -3)" if context.dialect == "torch" else ".swapaxes(-2, -3)"
    return code[:match.end("x")] + swap + ".reshape(" + code[match.end():]


def _project_output(code: str, context: Context) -> str | None:
    """``return merged`` -> ``return (merged) @ W_o``."""
    w_o = context.names.get("W_o")
    match = re.match(r"^return\s+(?P<x>.+)$", code)
    if w_o is None or match is None:
        return None
    x = match["x"].strip()
    x = x if re.fullmatch(r"[\w.]+(\([^()]*\))?", x) else f"({x})"
    return f"return {x} @ {w_o}"


_ROLES = {"q": "W_q", "k": "W_k", "v": "W_v", "q_heads": "W_q", "k_heads": "W_k",
          "v_heads": "W_v"}


def _own_matrix(code: str, context: Context) -> str | None:
    """The line projecting one role uses that role's matrix (or gets the projection it lacks)."""
    role = _ROLES.get(context.stage)
    names = context.names
    if role is None or any(w not in names for w in ("W_q", "W_k", "W_v", "X_q", "X_kv")):
        return None
    own = names[role]
    others = [names[w] for w in ("W_q", "W_k", "W_v") if w != role]
    found = re.search(r"\b(" + "|".join(map(re.escape, others)) + r")\b", code)
    if found is not None:
        return code[:found.start()] + own + code[found.end():]
    if re.search(rf"\b{re.escape(own)}\b", code):
        return None
    source = names["X_q"] if role == "W_q" else names["X_kv"]
    found = re.search(rf"\b{re.escape(source)}\b", code)
    if found is None:
        return None
    return code[:found.start()] + f"{source} @ {own}" + code[found.end():]


def _untransposed(code: str, context: Context) -> str | None:
    """``W_q.T`` -> ``W_q``."""
    weights = [context.names[w] for w in ("W_q", "W_k", "W_v", "W_o") if w in context.names]
    if not weights:
        return None
    pattern = r"\b(" + "|".join(map(re.escape, weights)) + r")\.T\b"
    new = re.sub(pattern, r"\1", code)
    return new if new != code else None


def _keys_from_kv(code: str, context: Context) -> str | None:
    """K and V are projected from X_kv: ``X_q`` on a K or V line -> ``X_kv``."""
    names = context.names
    if context.stage not in ("k", "v", "k_heads", "v_heads") or "X_q" not in names:
        return None
    new = re.sub(rf"\b{re.escape(names['X_q'])}\b", names["X_kv"], code)
    return new if new != code else None


# --- input mutation ----------------------------------------------------------------------------

def _new_array(code: str, context: Context) -> str | None:
    """``Q /= s`` -> ``Q = Q / s``."""
    match = _AUGMENTED.match(code)
    if match is None:
        return None
    rhs = match["rhs"].strip()
    rhs = rhs if re.fullmatch(rf"{_OPERAND}", rhs) else f"({rhs})"
    return f"{match['lhs']} = {match['lhs']} {match['op']} {rhs}"


# --- causal masks --------------------------------------------------------------------------------

_TRIANGLE = re.compile(r"(?P<f>\b(?:np|jnp|torch)\.(?:tril|triu)|\.(?:tril|triu))\("
                       r"(?P<args>(?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)")


def _triangle_args(match: re.Match[str]) -> tuple[list[str], int | None]:
    """The triangle call's arguments, and which one is the diagonal offset (the second of
    ``np.tril(m, k)``, the first of the method ``x.tril(k)``), if given."""
    parts = _top_level_parts(match["args"])
    for i, part in enumerate(parts):
        if re.match(r"(?:k|diagonal)\s*=", part):
            return parts, i
    positional = [i for i, part in enumerate(parts) if "=" not in part]
    wanted = 0 if match["f"].startswith(".") else 1
    return parts, (positional[wanted] if len(positional) > wanted else None)


def _offset(code: str, match: re.Match[str]) -> str:
    parts, at = _triangle_args(match)
    if at is None:
        return "0"
    return re.sub(r"^(?:k|diagonal)\s*=\s*", "", parts[at])


def _with_offset(code: str, match: re.Match[str], offset: str, name: str | None = None) -> str:
    """The triangle call rewritten with another diagonal offset (and function name)."""
    f = match["f"] if name is None else re.sub(r"tril|triu", name, match["f"])
    parts, at = _triangle_args(match)
    keyword = "diagonal" if "torch" in f or f.startswith(".") else "k"
    value = f"{keyword}={offset}"
    if f.startswith("."):  # x.tril(k): the offset is the first argument
        parts = [value] if at is None else [*parts[:at], value, *parts[at + 1:]]
    elif at is None:
        parts = [*parts, value]
    else:
        parts[at] = value
    return code[:match.start()] + f"{f}({', '.join(parts)})" + code[match.end():]


def _plus(offset: str, by: int) -> str:
    """``offset + by`` written simply (``0 + 1`` is ``1``, ``m - n - 1 + 1`` is ``m - n``)."""
    if re.fullmatch(r"-?\d+", offset.strip()):
        return str(int(offset) + by)
    trailing = re.fullmatch(r"(?P<head>.+?)\s*(?P<sign>[-+])\s*(?P<n>\d+)", offset.strip())
    if trailing:
        total = (int(trailing["n"]) if trailing["sign"] == "+" else -int(trailing["n"])) + by
        if total == 0:
            return trailing["head"]
        return f"{trailing['head']} {'+' if total > 0 else '-'} {abs(total)}"
    return f"{offset} {'+' if by > 0 else '-'} {abs(by)}"


def _negated(code: str, match: re.Match[str]) -> bool:
    """Is the triangle used as its complement (``~``, ``1 -``, ``logical_not``, ``== 0``)?"""
    before = code[:match.start()].rstrip()
    after = code[match.end():]
    return (before.endswith(("~", "1 -", "1-", "logical_not(")) or
            bool(re.match(r"\s*(?:==\s*0|\.logical_not\(\))", after)))


def _shift_diagonal(by: int) -> Rewrite:
    def shift(code: str, context: Context) -> str | None:
        match = _TRIANGLE.search(code)
        if match is None:
            return None
        return _with_offset(code, match, _plus(_offset(code, match), by))
    return shift


def _complement_mask(code: str, context: Context) -> str | None:
    """The complement undone: ``~tril`` -> ``tril``; ``triu(k=a)`` -> ``tril(k=a - 1)``."""
    match = _TRIANGLE.search(code)
    if match is None:
        return None
    if _negated(code, match):
        before = re.sub(r"(?:~\s*|1\s*-\s*|\b(?:np|torch|jnp)\.logical_not\()\s*$", "",
                        code[:match.start()])
        after = re.sub(r"^\s*(?:==\s*0|\.logical_not\(\))", "", code[match.end():])
        if code[:match.start()].rstrip().endswith("logical_not("):
            after = re.sub(r"^\s*\)", "", after, count=1)
        return before + code[match.start():match.end()] + after
    if "triu" in match["f"]:
        return _with_offset(code, match, _plus(_offset(code, match), -1), "tril")
    return None


def _lower_triangle(code: str, context: Context) -> str | None:
    """``triu`` kept as the allowed part -> ``tril`` with the same offset; a comparison of key
    and query positions turned the other way (``j >= i`` -> ``j <= i``)."""
    match = _TRIANGLE.search(code)
    if match is None:
        comparisons = re.findall(r"<=|>=|(?<![<>=])[<>](?!=)", code)
        if len(comparisons) != 1:
            return None
        flip = {"<=": ">=", ">=": "<=", "<": ">", ">": "<"}
        return re.sub(r"<=|>=|(?<![<>=])[<>](?!=)", lambda m: flip[m.group(0)], code)
    if _negated(code, match) or "triu" not in match["f"]:
        return None
    return _with_offset(code, match, _offset(code, match), "tril")


#: a lower triangle (a `tril` call or a buffer named for it, sliced) then transposed
_TRANSPOSED_TRIANGLE = re.compile(
    r"(?P<x>\b[\w.]*tril\w*(?:\([^()]*\))?(?:\[[^\]]*\])*)"
    r"(?:\.m?T\b|\.t\(\)|\.transpose\(\s*-?\d\s*,\s*-?\d\s*\))")


def _untransposed_triangle(code: str, context: Context) -> str | None:
    """A lower triangle transposed into the upper one (``self.tril[:T, :T].T``): the
    transpose taken off."""
    found = list(_TRANSPOSED_TRIANGLE.finditer(code))
    if len(found) != 1:
        return None
    return _TRANSPOSED_TRIANGLE.sub(lambda match: match["x"], code)


def _bottom_right(code: str, context: Context) -> str | None:
    """``tril(ones((n, m)))`` -> ``tril(ones((n, m)), k=m - n)``."""
    match = _TRIANGLE.search(code)
    shape = re.search(r"\((?P<n>[\w.\[\]-]+)\s*,\s*(?P<m>[\w.\[\]-]+)\s*\)", match["args"]) \
        if match else None
    if match is None or shape is None or "tril" not in match["f"] or _negated(code, match):
        return None
    base = _offset(code, match)
    aligned = f"{shape['m']} - {shape['n']}"
    if re.fullmatch(r"-?\d+", base):
        return _with_offset(code, match, _plus(aligned, int(base)) if int(base) else aligned)
    return _with_offset(code, match, f"{base} + {aligned}")


def _add_causal_mask(code: str, context: Context) -> str | None:
    """The scores line kept, then the keys after each query blocked (only on the line of the
    scores the mask belongs to, never on a later value)."""
    match = _ASSIGNMENT.match(code)
    if match is None or context.stage != "masked":
        return None
    s = match["lhs"]
    if context.dialect == "torch":
        keep = f"torch.ones({s}.shape[-2:], dtype=torch.bool).tril()"
        return f"{code}\n{s} = {s}.masked_fill(~{keep}, -1e9)"
    module = context.module()
    return f"{code}\n{s} = {module}.where({module}.tril({module}.ones({s}.shape[-2:], " \
        f"dtype=bool)), {s}, -1e9)"


# --- positional encodings ----------------------------------------------------------------------

def _swap_sin_cos(code: str, context: Context) -> str | None:
    if not re.search(r"\bsin\b", code) or not re.search(r"\bcos\b", code):
        return None
    return re.sub(r"\b(sin|cos)\b", lambda m: "cos" if m[1] == "sin" else "sin", code)


def _interleave(code: str, context: Context) -> str | None:
    """``concatenate([sin, cos], axis=-1)`` -> ``stack([sin, cos], axis=-1).reshape(-1, d)``."""
    d_model = context.names.get("d_model")
    match = re.search(r"\b(?P<m>np|jnp)\.(?:concatenate|hstack)\(\s*(?P<parts>\[(?:[^\[\]]|"
                      r"\[[^\[\]]*\])*\])\s*(?:,\s*axis\s*=\s*(?:-1|1)\s*)?\)", code)
    if match is None or d_model is None:
        return None
    stacked = f"{match['m']}.stack({match['parts']}, axis=-1).reshape(-1, {d_model})"
    return code[:match.start()] + stacked + code[match.end():]


def _pair_index(code: str, context: Context) -> str | None:
    """``2 * j / d`` or ``j / d`` -> ``2 * (j // 2) / d``: the pair's index, not the feature's
    (``2 * (i + 1) / d`` -> ``2 * ((i + 1) // 2) / d``)."""
    d_model = context.names.get("d_model")
    if d_model is None:
        return None
    denominator = rf"(?:np\.float(?:32|64)\(\s*{re.escape(d_model)}\s*\)|{re.escape(d_model)})"
    twice = re.search(r"(?P<open>\(\s*)?2\s*\*\s*(?P<j>[A-Za-z_]\w*|\([^()]*\))"
                      r"(?P<close>\s*\))?\s*/", code)
    if twice is not None:
        start = twice.start("open") if twice["open"] and twice["close"] else twice.start()
        end = twice.end("close") if twice["open"] and twice["close"] else twice.end("j")
        return code[:start] + f"(2 * ({twice['j']} // 2))" + code[end:]
    once = re.search(rf"(?<![\w*.])(?P<j>[A-Za-z_]\w*)\s*/\s*{denominator}", code)
    if once is not None:
        return code[:once.start()] + f"2 * ({once['j']} // 2)" + code[once.end("j"):]
    return None


def _double_exponent(code: str, context: Context) -> str | None:
    """``theta ** (-i / d)`` or ``power(10000, i / d)`` -> the exponent's numerator doubled."""
    match = re.search(rf"(?:\*\*\s*\(?\s*-?\s*|power\(\s*[\w.]+\s*,\s*-?\s*)(?P<i>{_ATOM})"
                      rf"\s*/", code)
    if match is None or re.match(r"2\s*\*", match["i"]):
        return None
    return code[:match.start("i")] + f"2 * {match['i']}" + code[match.end("i"):]


def _divide_by_power(code: str, context: Context) -> str | None:
    """``pos * 10000 ** e`` -> ``pos / 10000 ** e``."""
    match = re.search(r"\*\s*(?=(?:np\.power\(\s*)?10000?(?:\.0*)?\b|\(?\s*10000)", code)
    if match is None or code[max(0, match.start() - 1)] == "*":
        return None
    return code[:match.start()] + "/ " + code[match.end():]


def _positions_from_zero(code: str, context: Context) -> str | None:
    """``arange(1, n + 1)`` -> ``arange(n)``."""
    new = re.sub(r"\barange\(\s*1\s*,\s*(?P<n>[^,()]+?)\s*\+\s*1\s*(?P<rest>,[^()]*)?\)",
                 lambda m: f"arange({m['n']}{m['rest'] or ''})", code)
    return new if new != code else None


def _given_positions(code: str, context: Context) -> str | None:
    """``arange(n)`` on the angles line -> the positions given, when they are given."""
    positions = context.names.get("positions")
    match = re.search(r"\b(?P<m>np|jnp|torch)\.arange\((?P<n>[^()]*(?:\([^()]*\))?[^()]*)\)",
                      code)
    if positions is None or match is None or positions in code:
        return None
    given = f"({match.group(0)} if {positions} is None else {match['m']}.asarray({positions}))"
    return code[:match.start()] + given + code[match.end():]


def _values_unrotated(code: str, context: Context) -> str | None:
    """``q, k, v = f(q), f(k), f(v)`` -> ``q, k = f(q), f(k)``: the values keep their own."""
    match = re.match(r"^(?P<targets>[\w.]+\s*,\s*[\w.]+)\s*,\s*(?P<v>[\w.]+)\s*=\s*(?P<rhs>.+)$",
                     code)
    if match is None or not re.search(r"(?i)v|value", match["v"]):
        return None
    parts = _top_level_parts(match["rhs"])
    if len(parts) != 3:
        return None
    return f"{match['targets']} = {parts[0]}, {parts[1]}"


# --- batch axes --------------------------------------------------------------------------------

#: what in a line works on 2-D arrays only: (pattern, what to write instead given the match and
#: the context, why: a sentence on the student's piece {0} and its replacement {1})
_TWO_D_ONLY: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], Context], str], str], ...] = (
    (re.compile(r"(?P<x>\b[A-Za-z_][\w.]*(?:\[[^\]]*\])?)\.T\b"),
     lambda m, c: c.swap_last(m["x"]),
     "`{0}` reverses every axis of a batched array, where `{1}` swaps only the last two"),
    (re.compile(r"(?P<x>\b[A-Za-z_][\w.]*)\.transpose\(\s*\)"),
     lambda m, c: c.swap_last(m["x"]),
     "`{0}` reverses every axis of a batched array, where `{1}` swaps only the last two"),
    (re.compile(r"\bnp\.dot\("),
     lambda m, c: "np.matmul(",
     "`np.dot` does not multiply batched arrays matrix by matrix; `np.matmul` does"),
    (re.compile(r"\b(?P<kw>axis|dim)\s*=\s*(?P<n>[01])\b"),
     lambda m, c: f"{m['kw']}={int(m['n']) - 2}",
     "`{0}` is another axis once batch axes come first, where `{1}` counts from the end"),
    (re.compile(r"(?P<x>\b[A-Za-z_][\w.]*)\.shape\[\s*(?P<n>[01])\s*\]"),
     lambda m, c: f"{m['x']}.shape[{int(m['n']) - 2}]",
     "`{0}` is another axis once batch axes come first, where `{1}` counts from the end"),
)


#: calls whose axis says where to put or take whole arrays (stack heads on a new first axis,
#: say): counting it from the end is not the same computation, so it is left as written
_PLACES_ARRAYS = re.compile(r"\b(?:stack|concatenate|cat|split|chunk|expand_dims|unsqueeze|"
                            r"repeat|repeat_interleave|tile|insert|moveaxis|flip|roll)\(")


def _rules_for(code: str) -> list[tuple[re.Pattern[str], Callable[[re.Match[str], Context], str],
                                        str]]:
    places = _PLACES_ARRAYS.search(code) is not None
    return [rule for rule in _TWO_D_ONLY if not (places and "axis|dim" in rule[0].pattern)]


def _last_two_axes(code: str, context: Context) -> str | None:
    """What works on 2-D arrays only, written to act on the last two axes (``K.T`` ->
    ``K.swapaxes(-1, -2)``, ``axis=1`` -> ``axis=-1``, ``shape[1]`` -> ``shape[-1]``, ...)."""
    new = code
    for pattern, replacement, _ in _rules_for(code):
        new = pattern.sub(lambda m, r=replacement: r(m, context), new)  # type: ignore[misc]
    return new if new != code else None


def two_d_only(line: str, context: Context) -> list[str]:
    """Why each 2-D-only piece of ``line`` fails on batched inputs, naming the piece and what
    to write instead."""
    code, _ = _split_comment(line)
    return [why.format(match.group(0), replacement(match, context))
            for pattern, replacement, why in _rules_for(code)
            for match in [pattern.search(code)] if match]


# --- a fix sentence in the submission's framework -----------------------------------------------

_NP_ARG = r"(?P<{0}>(?:[^,()]|" + _PAREN + r")+?)"


#: NumPy code in a catalogue sentence, as torch says it (applied in order, to code spans only)
_TORCH: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"np\.swapaxes\(" + _NP_ARG.format("x") + r",\s*(?P<i>-?\d),\s*(?P<j>-?\d)\)"),
     r"\g<x>.transpose(\g<i>, \g<j>)"),
    (re.compile(r"np\.expand_dims\(" + _NP_ARG.format("x") + r",\s*(?P<i>-?\d)\)"),
     r"\g<x>.unsqueeze(\g<i>)"),
    (re.compile(r"np\.repeat\(" + _NP_ARG.format("x") + r",\s*(?P<h>\w+),\s*axis="),
     r"\g<x>.repeat_interleave(\g<h>, dim="),
    (re.compile(r"np\.(?P<f>triu|tril)\(" + _NP_ARG.format("a") + r",\s*k="),
     r"torch.\g<f>(\g<a>, diagonal="),
    (re.compile(r"\b(?P<f>triu|tril)\((?P<a>[^()]*),\s*k="), r"\g<f>(\g<a>, diagonal="),
    (re.compile(r"^k="), "diagonal="),
    (re.compile(r"\.max\(axis="), ".amax(axis="),
    (re.compile(r"np\.sqrt\("), "math.sqrt("),
    (re.compile(r"-np\.inf"), "float('-inf')"),
    (re.compile(r"\.copy\(\)"), ".clone()"),
    (re.compile(r"dtype=bool"), "dtype=torch.bool"),
    (re.compile(r"\baxis="), "dim="),
    (re.compile(r"\bkeepdims="), "keepdim="),
    (re.compile(r"\bnp\."), "torch."),
)
#: ... as TensorFlow says it (what tf lacks, from its NumPy API)
_TF: tuple[tuple[re.Pattern[str], Any], ...] = (
    (re.compile(r"np\.swapaxes\(" + _NP_ARG.format("x") + r",\s*-1,\s*-2\)"),
     r"tf.linalg.matrix_transpose(\g<x>)"),
    (re.compile(r"(?P<x>\b\w+)\.(?P<f>max|sum)\(axis="), r"tf.reduce_\g<f>(\g<x>, axis="),
    (re.compile(r"(?P<x>\b\w+)\.reshape\((?P<a>[^()]*)\)"), r"tf.reshape(\g<x>, (\g<a>))"),
    (re.compile(r"np\.sqrt\((?P<x>[^()]*)\)"), r"tf.math.sqrt(tf.cast(\g<x>, tf.float32))"),
    (re.compile(r"-np\.inf"), "-1e9"),
    (re.compile(r"np\.arange\("), "tf.range("),
    (re.compile(r"\bnp\.(?=(?:tril|triu|swapaxes|repeat)\()"), "tf.experimental.numpy."),
    (re.compile(r"\bnp\."), "tf."),
)
_JAX: tuple[tuple[re.Pattern[str], Any], ...] = ((re.compile(r"\bnp\."), "jnp."),)
_IN_DIALECT = {"torch": _TORCH, "tf": _TF, "jax": _JAX}


def in_dialect(sentence: str, dialect: str, names: Mapping[str, str] | None = None) -> str:
    """A catalogue sentence whose code (between backticks) is NumPy in SPEC's names, with that
    code in the student's ``names`` of the arguments ({"mask": "attn_mask"}) and written in
    ``dialect``'s words ("numpy": as it is)."""
    renamed = {old: new for old, new in (names or {}).items() if old != new and new}
    rules: list[tuple[re.Pattern[str], Any]] = list(_IN_DIALECT.get(dialect, ()))
    if renamed:  # all at once: a student's Q may be SPEC's K
        alternatives = "|".join(re.escape(old) for old in sorted(renamed, key=len, reverse=True))
        rules.insert(0, (re.compile(rf"(?<![\w.])(?:{alternatives})\b(?!\s*=[^=])"),
                         lambda match: renamed[match.group(0)]))
    if not rules:
        return sentence

    def translate(span: re.Match[str]) -> str:
        code = span.group(1)
        for pattern, replacement in rules:
            code = pattern.sub(replacement, code)
        return f"`{code}`"

    return re.sub(r"`([^`]+)`", translate, sentence)


# the rewrites a catalogue row may name, each kept as the line's comment-preserving form
divide_by_sqrt = _code_only(_divide_by_sqrt)
keep_summed_axis = _code_only(_keep_summed_axis)
transpose_first_factor = _code_only(_transpose_first_factor)
weight_the_sum = _code_only(_weight_the_sum)
input_first = _code_only(_input_first)
transpose_weight = _code_only(_transpose_weight)
undo_heads_steps = _code_only(_undo_heads_steps)
both_paths = _code_only(_both_paths)
own_paths = _code_only(_own_paths)
recompute_from_scaled = _code_only(_recompute_from_scaled)
rescale_accumulator = _code_only(_rescale_accumulator)
rescale_sum = _code_only(_rescale_sum)
invert_rescale = _code_only(_invert_rescale)
add_log_sum = _code_only(_add_log_sum)
add_running_max = _code_only(_add_running_max)
divide_by_running_sum = _code_only(_divide_by_running_sum)
keep_scaled_max = _code_only(_keep_scaled_max)
subtract_d = _code_only(_subtract_d)
scale_the_contribution = _code_only(_scale_the_contribution)
full_jacobian_of_product = _code_only(_full_jacobian_of_product)
full_jacobian_of_diagonal = _code_only(_full_jacobian_of_diagonal)
flip_scale = _code_only(_flip_scale)
divide_by_head_width = _code_only(_divide_by_head_width)
add_scale = _code_only(_add_scale)
scale_inside_softmax = _code_only(_scale_inside_softmax)
right_axis = _code_only(_right_axis)
row_max = _code_only(_row_max)
row_softmax = _code_only(_row_softmax)
row_totals = _code_only(_row_max, alone=False)
exponentiate_first = _code_only(_exponentiate_first)
then_normalise = _code_only(_then_normalise)
subtract_row_max = _code_only(_subtract_row_max)
blend_values = _code_only(_blend_values)
queries_first = _code_only(_queries_first)
transpose_keys = _code_only(_transpose_keys)
swap_branches = _code_only(_swap_branches)
fill_far_below = _code_only(_fill_far_below)
apply_mask = _code_only(_apply_mask)
renormalise = _code_only(_renormalise)
mask_as_given = _code_only(_mask_as_given)
block_with_mask = _code_only(_block_with_mask)
split_then_transpose = _code_only(_split_then_transpose)
transpose_then_merge = _code_only(_transpose_then_merge)
project_output = _code_only(_project_output)
own_matrix = _code_only(_own_matrix)
untransposed = _code_only(_untransposed)
keys_from_kv = _code_only(_keys_from_kv)
new_array = _code_only(_new_array)
complement_mask = _code_only(_complement_mask)
lower_triangle = _code_only(_lower_triangle)
untransposed_triangle = _code_only(_untransposed_triangle)
def _positive_angle(code: str, context: Context) -> str | None:
    """A complex rotation by minus the angle turned the right way: ``exp(-1j * a)`` ->
    ``exp(1j * a)``, ``torch.polar(r, -a)`` -> ``torch.polar(r, a)``; None for any other line
    (one with sines and cosines has no single sign to flip)."""
    new = re.sub(r"(\bexp\(\s*)-\s*(1j\b)", r"\1\2", code)
    new = re.sub(r"(\bexp\(\s*)-\s*(?=[A-Za-z_(])(?!1j)", r"\1", new) \
        if "1j" in code and new == code else new
    new = re.sub(r"(\bpolar\((?:[^(),]|\([^()]*\))+,\s*)-\s*", r"\1", new)
    return new if new != code else None


positive_angle = _code_only(_positive_angle)
diagonal_up = _code_only(_shift_diagonal(+1))
diagonal_down = _code_only(_shift_diagonal(-1))
bottom_right = _code_only(_bottom_right)
add_causal_mask = _code_only(_add_causal_mask)
swap_sin_cos = _code_only(_swap_sin_cos)
interleave = _code_only(_interleave)
pair_index = _code_only(_pair_index)
double_exponent = _code_only(_double_exponent)
divide_by_power = _code_only(_divide_by_power)
positions_from_zero = _code_only(_positions_from_zero)
given_positions = _code_only(_given_positions)
values_unrotated = _code_only(_values_unrotated)
last_two_axes = _code_only(_last_two_axes)


def rewrite(rewrites: tuple[Rewrite, ...], line: str, context: Context,
            alone: bool = True) -> str | None:
    """The first of a row's rewrites that applies to ``line``: the code replacing it (with
    ``alone``, only a rewrite that fixes the mistake on this line by itself)."""
    for candidate in rewrites:
        if alone and not getattr(candidate, "alone", True):
            continue
        new = candidate(line.strip(), context)
        if new is not None:
            return new
    return None
