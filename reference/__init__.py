"""Correct float64 implementations of the assignments, exactly as SPEC section 1 defines them,
and each task's pipeline of stages with buggy alternatives (``reference.tasks.<task>``).

The grader computes these in its own process; student code never sees this package.
"""

from reference.tasks.attention import scaled_dot_product_attention
from reference.tasks.causal_mask import causal_mask
from reference.tasks.causal_self_attention import causal_self_attention
from reference.tasks.multi_head_attention import merge_heads, multi_head_attention, split_heads
from reference.tasks.positional_encoding import positional_encoding
from reference.tasks.rope import rope
from reference.tasks.softmax import softmax

__all__ = [
    "causal_mask",
    "causal_self_attention",
    "positional_encoding",
    "rope",
    "merge_heads",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]
