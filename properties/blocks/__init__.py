"""Properties of the blocks family: the transformer block, its stacks, and what they cost
(``spec/blocks/``). So far: the model sizes the slides tabulate (:mod:`.size`).
"""
