"""The rules core: cards, rules and presets, the batched state, the deal, legal moves,
trick play, scoring and the engine that steps a batch of games in lockstep.

Pure numpy; it imports neither Gymnasium nor PettingZoo (``tests/test_layers.py``).
"""
