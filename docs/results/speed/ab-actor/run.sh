#!/bin/sh
# Same-run A/B of `python -m experiments.dmc --actor` against the serial loop: 7
# iterations each from dmc_all at the defaults (run 3's targets and seed), alternated
# twice; the log's "seconds" is an iteration's wall time (iteration 1 of --actor plays
# its first round before fitting, so iterations 2-7 are compared).
set -e
out=$(dirname "$0")
for pass in 1 2; do
  for mode in serial actor; do
    flag=""; [ "$mode" = actor ] && flag="--actor"
    rm -rf "/tmp/ab-actor-$mode"
    python -m experiments.dmc --init dmc_all --targets rest --iterations 7 --save-every 100 \
      --seed 920 --no-progress $flag --out-dir "/tmp/ab-actor-$mode"
    cp "/tmp/ab-actor-$mode/log.jsonl" "$out/$mode-$pass.jsonl"
  done
done
