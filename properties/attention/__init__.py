"""Properties of the attention family: attention, score functions, depth, masking,
multi-head attention and scaling (``spec/attention/``).

``strategies`` holds the family's strategies (on top of the shared ones) and
``expected`` the float64 formulas the properties compare against.
"""
