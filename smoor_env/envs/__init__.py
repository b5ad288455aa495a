"""The environments over the engine: PettingZoo's AEC env (``aec_env``), Gymnasium's
single-agent and native vector envs (``gym_env``, in worker processes: ``workers``), the
Stable-Baselines3 adapter (``sb3``, the rl extra), rewards (``reward``) and the loop that
plays agents at a table (``agent_loop``).
"""
