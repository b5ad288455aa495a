#!/bin/bash
# The protocol's commands (docs/results/2026-12-07-distilled-mc-protocol.md), from the worktree of 72a86e2.
cd /work/dm_wt
P=/work/main/.venv/bin/python
S=/work/main/runs/distill_mc/network.pt
SUM=38c92e351ace6302efee6affabaecf7338cc9defe20317b7e484537457592c93
echo $SUM $S | sha256sum -c || exit 1
export OMP_NUM_THREADS=1 MPLBACKEND=Agg
O=docs/results/rl/distilled_mc
mkdir -p $O
(
  date -u +"variants start %T"
  taskset -c 0 $P -m experiments.agent_strength \
    --ladder ismcts:value=relative,root=halving,prior=ppo:checkpoint=dmc4_it1000,prior_weight=0.3 \
    ismcts:value=relative,root=halving,prior=ppo:checkpoint=$S,prior_weight=0.3 \
    --rule-sets trump_hearts bidding partners pip_scoring --players 3 4 5 --deals 200 \
    --seed 2700 --workers 1 --timing-decisions 30 \
    --out $O/variants.json; echo "variants rc=$?"
  date -u +"variants end %T"
  echo $SUM $S | sha256sum -c || exit 1
  date -u +"policy start %T"
  taskset -c 0 $P -m experiments.agent_strength --ladder mc ppo:checkpoint=$S \
    --deals 400 --seed 2000 --workers 1 --timing-decisions 200 \
    --out $O/policy.json; echo "policy rc=$?"
  date -u +"policy end %T"
) > $O/core0.log 2>&1 &
(
  date -u +"hearts start %T"
  taskset -c 1 $P -m experiments.agent_strength \
    --ladder ismcts:prior=ppo:checkpoint=dmc4_it1000,prior_weight=0.3 \
    ismcts:prior=ppo:checkpoint=$S,prior_weight=0.3 --rule-sets hearts hearts_no_passing \
    --players 3 4 5 --deals 200 --seed 2700 --workers 1 --timing-decisions 30 \
    --out $O/hearts.json; echo "hearts rc=$?"
  date -u +"hearts end %T"
  echo $SUM $S | sha256sum -c || exit 1
  date -u +"smoorverliefd start %T"
  taskset -c 1 $P -m experiments.agent_strength --ladder ismcts:prior=specialists \
    ismcts:prior=ppo:checkpoint=$S,prior_weight=0.3 --rule-sets smoorverliefd \
    --players 3 4 5 --deals 200 --seed 2700 --workers 1 --timing-decisions 30 \
    --out $O/smoorverliefd.json; echo "smoorverliefd rc=$?"
  date -u +"smoorverliefd end %T"
) > $O/core1.log 2>&1 &
wait
