"""Correct float64 implementations of the three assignments, exactly as SPEC section 1 defines them.

The grader computes these in its own process; student code never sees this package.
"""

from reference.attention import scaled_dot_product_attention
from reference.multi_head import merge_heads, multi_head_attention, split_heads
from reference.softmax import softmax

__all__ = [
    "merge_heads",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]
