"""Properties of the positions family: sinusoidal, learned and binary encodings, RoPE and
ALiBi (``spec/positions/``).

``strategies`` holds the family's strategies (on top of the shared ones); each topic
module writes out the float64 formulas it compares against (``absolute`` reuses
``sinusoidal``'s).
"""
