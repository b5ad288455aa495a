#!/bin/bash
# The protocol's commands (docs/results/2026-12-07-distilled-table-protocol.md), from the worktree of a736424.
cd /work/dt_wt
P=/work/main/.venv/bin/python
S=/work/main/runs/distill_table/network.pt
echo 2bd1a2781899e66fbe8348f75e4a186c54878eb2d08e9310a94d7ce5bd6fbe45 $S | sha256sum -c || exit 1
export OMP_NUM_THREADS=1 MPLBACKEND=Agg
(
  date -u +"variants start %T"
  taskset -c 0 $P -m experiments.agent_strength \
    --ladder ismcts:value=relative,root=halving,prior=ppo:checkpoint=dmc4_it1000,prior_weight=0.3 \
    ismcts:value=relative,root=halving,prior=ppo:checkpoint=$S,prior_weight=0.3 \
    --rule-sets trump_hearts bidding partners pip_scoring --players 3 4 5 --deals 200 \
    --seed 2400 --workers 1 --timing-decisions 30 \
    --out docs/results/rl/distilled_table/variants.json; echo "variants rc=$?"
  date -u +"variants end %T"
  echo 2bd1a2781899e66fbe8348f75e4a186c54878eb2d08e9310a94d7ce5bd6fbe45 $S | sha256sum -c || exit 1
  date -u +"policy start %T"
  taskset -c 0 $P -m experiments.agent_strength --ladder mc ppo:checkpoint=$S \
    --deals 400 --seed 2000 --workers 1 --timing-decisions 200 \
    --out docs/results/rl/distilled_table/policy.json; echo "policy rc=$?"
  date -u +"policy end %T"
) > core0.log 2>&1 &
(
  date -u +"hearts start %T"
  taskset -c 1 $P -m experiments.agent_strength \
    --ladder ismcts:prior=ppo:checkpoint=dmc4_it1000,prior_weight=0.3 \
    ismcts:prior=ppo:checkpoint=$S,prior_weight=0.3 --rule-sets hearts hearts_no_passing \
    --players 3 4 5 --deals 200 --seed 2400 --workers 1 --timing-decisions 30 \
    --out docs/results/rl/distilled_table/hearts.json; echo "hearts rc=$?"
  date -u +"hearts end %T"
  echo 2bd1a2781899e66fbe8348f75e4a186c54878eb2d08e9310a94d7ce5bd6fbe45 $S | sha256sum -c || exit 1
  date -u +"smoorverliefd start %T"
  taskset -c 1 $P -m experiments.agent_strength --ladder ismcts:prior=specialists \
    ismcts:prior=ppo:checkpoint=$S,prior_weight=0.3 --rule-sets smoorverliefd \
    --players 3 4 5 --deals 200 --seed 2400 --workers 1 --timing-decisions 30 \
    --out docs/results/rl/distilled_table/smoorverliefd.json; echo "smoorverliefd rc=$?"
  date -u +"smoorverliefd end %T"
) > core1.log 2>&1 &
wait
