"""Pieces of training loops: the opponent pool and its environment (``opponents``),
self-play snapshots (``selfplay``, needs torch) and imitation labels (``labels``).
``experiments/train_ppo.py`` is a command line over them.
"""
