#!/bin/bash
# The protocol's commands (docs/results/2026-12-08-targets-one-network.md), from the
# worktree of its commit (/work/t2_wt), with the main checkout's virtual environment.
cd /work/t2_wt
P=/work/main/.venv/bin/python
N=agents/checkpoints/one_network.pt
SUM=38c92e351ace6302efee6affabaecf7338cc9defe20317b7e484537457592c93
echo $SUM $N | sha256sum -c || exit 1
export OMP_NUM_THREADS=1 MPLBACKEND=Agg
O=docs/results/rl/targets_one_network
L="ismcts:prior=specialists ismcts"
(
  date -u +"variants start %T"
  taskset -c 0 $P -m experiments.agent_strength --ladder $L \
    --rule-sets trump_hearts bidding partners pip_scoring --deals 400 --seed 2000 \
    --workers 1 --timing-decisions 200 --out $O/search_variants.json; echo "variants rc=$?"
  date -u +"variants end %T"
  echo $SUM $N | sha256sum -c || exit 1
  date -u +"smoorverliefd 4 start %T"
  taskset -c 0 $P -m experiments.agent_strength --ladder $L \
    --rule-sets smoorverliefd --players 4 --deals 400 --seed 2000 \
    --workers 1 --timing-decisions 200 --out $O/search_smoorverliefd_4.json
  echo "smoorverliefd 4 rc=$?"
  date -u +"smoorverliefd 4 end %T"
) > $O/core0.log 2>&1 &
(
  date -u +"hearts start %T"
  taskset -c 1 $P -m experiments.agent_strength --ladder $L \
    --rule-sets hearts hearts_no_passing --deals 400 --seed 2000 \
    --workers 1 --timing-decisions 200 --out $O/search_hearts.json; echo "hearts rc=$?"
  date -u +"hearts end %T"
  echo $SUM $N | sha256sum -c || exit 1
  date -u +"smoorverliefd 3 5 start %T"
  taskset -c 1 $P -m experiments.agent_strength --ladder $L \
    --rule-sets smoorverliefd --players 3 5 --deals 400 --seed 2000 \
    --workers 1 --timing-decisions 0 --out $O/search_smoorverliefd_3_5.json
  echo "smoorverliefd 3 5 rc=$?"
  date -u +"smoorverliefd 3 5 end %T"
) > $O/core1.log 2>&1 &
wait
