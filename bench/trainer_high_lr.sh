#!/bin/sh
# bench/trainer_high_lr.sh — `make bench-trainer-high-lr`: the CPU trainer's wall time on a run
# whose learning rate is far too high (it collapses onto the byte-level plateau, and its values
# sink below FLT_MIN) against the same run at a healthy learning rate, both measured here,
# alternated REPEATS times (default 3). Prints each pair, the median ratio and the worst;
# target: ratio <= 1.5 (7.7, one pair, before scaletune-train flushed subnormals to zero).
# Needs the corpus (scripts/prepare-data), as every scaletune-train run without --data.
# Environment: TRAIN (default build/scaletune-train), TOKENS (default 3e5), REPEATS.
set -eu
TRAIN=${TRAIN:-build/scaletune-train}
TOKENS=${TOKENS:-3e5}
REPEATS=${REPEATS:-3}
[ -x "$TRAIN" ] || { echo "trainer_high_lr.sh: $TRAIN not built (make)" >&2; exit 2; }
seconds() { # $1 lr: the run's own "seconds" from its final record
  "$TRAIN" --d-model 32 --n-layer 1 --n-head 1 --tokens "$TOKENS" --lr "$1" --warmup 0.05 \
    --weight-decay 0.0028 --seed 1337 --seq-len 64 --batch 16 --eval-batches 16 --threads 1 |
    sed -n 's/.*"event":"final".*"seconds":\([0-9.eE+-]*\).*/\1/p'
}
ratios=""
i=1
while [ "$i" -le "$REPEATS" ]; do
  ok=$(seconds 0.003); hi=$(seconds 0.227)
  [ -n "$ok" ] && [ -n "$hi" ] || { echo "trainer_high_lr.sh: a run printed no final record (the corpus: scripts/prepare-data)" >&2; exit 1; }
  r=$(awk -v a="$hi" -v b="$ok" 'BEGIN { printf "%.2f", a / b }')
  echo "repeat $i: lr 0.003 $ok s, lr 0.227 $hi s, ratio $r"
  ratios="$ratios $r"
  i=$((i + 1))
done
echo "$ratios" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END {
  printf "BENCH trainer.high_lr_time_ratio median %.2f worst %.2f (target <= 1.5)\n",
    v[int((NR + 1) / 2)], v[NR] }'
