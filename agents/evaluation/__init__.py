"""Evaluating agents: duplicate deals (``duplicate``), the statistics (``stats``), a
tournament's tables and plots (``tournament``, ``plots``), run folders that resume
(``runs``) and where the work runs (``backends``: processes or Ray).

``experiments/win_rates.py`` (``smoor-bench``), ``experiments/league.py`` and
``experiments/agent_strength.py`` are command lines over these modules.
"""
