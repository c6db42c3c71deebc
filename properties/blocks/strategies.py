"""Strategies of the blocks family: the shared ones (re-exported), for now.

Everything is float64 on the CPU.
"""

from __future__ import annotations

from specformer.properties.strategies import BOUND, bounded_floats, permutations_of, seeds, tensors

__all__ = ["BOUND", "bounded_floats", "permutations_of", "seeds", "tensors"]
