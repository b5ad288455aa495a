"""One DMC iteration at the defaults from dmc_all (play all 19 tables at 128 games, then
one pass of the fit): its times and a digest of what it played and learned. Run from the
root of the code to time, `PYTHONPATH=. python ab_iter.py old|new`."""
import hashlib
import json
import sys
import time

import numpy as np
import torch

from agents.policy_net import load_checkpoint
from agents.training.dmc import FIELDS, DMCTables, epsilon_greedy, update
from experiments.dmc import Args

torch.manual_seed(7)
torch.set_num_threads(1)
args = Args()
net = load_checkpoint("dmc_all")[0]
rules = args.tables()
tables = DMCTables(rules, 128, 300)
rng = np.random.default_rng(300)
generator = torch.Generator().manual_seed(300)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-4, eps=1e-5)
choose = epsilon_greedy(net, args.epsilon, rng)
t0 = time.perf_counter()
net.eval()
parts = [tables.play_round(k, choose) for k in range(len(rules))]
data = {k: np.concatenate([p[k] for p in parts]) for k in FIELDS}
t1 = time.perf_counter()
net.train()
fit = update(net, optimizer, data, args.minibatch, generator, args.value_coef, targets="rest")
t2 = time.perf_counter()
print(json.dumps({
    "tag": sys.argv[1], "play_s": t1 - t0, "fit_s": t2 - t1, "decisions": fit.decisions,
    "actions_sha": hashlib.sha256(data["actions"].tobytes()).hexdigest()[:12],
    "move_mse": fit.move_mse, "value_mse": fit.value_mse,
    "w_sum": float(net.trunk[0].weight.detach().numpy().sum())}))
