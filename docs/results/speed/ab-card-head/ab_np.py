"""The numpy network (``ppo``'s) on 30 positions of 128 four-player Smoorverliefd games:
ms a call at batch 1 (10 games a position) and 128; saves the logits to compare sides.
Run from the root of the code to time, `PYTHONPATH=. python ab_np.py old|new`."""
import sys
import time

import numpy as np

from agents.ppo import NumpyPolicyNet, resolve_checkpoint
from smoor_env.core.engine import Engine
from smoor_env.core.rules import Rules
from smoor_env.observation import observe

engine = Engine(Rules(target_score=None), 128)
engine.reset(5)
rng = np.random.default_rng(0)
positions = []  # (observations (128, OBS), masks (128, 70))
for _ in range(30):
    positions.append((observe(engine, engine.state.current_player), engine.legal_mask.copy()))
    engine.step(engine.sample_legal(rng))
net = NumpyPolicyNet.load(resolve_checkpoint("dmc_all"))[0]
np.save(f"np_logits_{sys.argv[1]}.npy", np.stack([net.logits(o, m) for o, m in positions]))
for batch in (1, 128):
    start = time.perf_counter()
    for _ in range(5 if batch == 128 else 1):
        for obs, mask in positions:
            for j in range(0, 128, batch) if batch == 128 else range(10):
                net.logits(obs[j:j + batch], mask[j:j + batch])
    calls = 5 * 30 if batch == 128 else 300
    print(sys.argv[1], batch, (time.perf_counter() - start) / calls * 1e3, "ms")
