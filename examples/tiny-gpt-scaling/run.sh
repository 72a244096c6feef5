#!/usr/bin/env bash
# examples/tiny-gpt-scaling/run.sh — the end-to-end study on the reference CPU trainer: a sweep of
# tiny byte-level GPTs (width, depth, tokens, learning rate, weight decay; warmup fixed) designed
# for the large run (study mode: `optimizer: {goal: extrapolate, target_factor: F}`) -> scaletune
# fit -> scaletune extrapolate to F x the per-run cap -> that run trained with the recommended
# settings (`extrapolate --emit yaml`: a one-run sweep of fixed parameters in the same store) ->
# scaletune report with the large run against the prediction written before it ran
# (`report --validate-sweep --expect`). `make demo` / `make demo-quick` run it. No inline Python.
# The prediction is written (extrapolate.json) and printed before the large run starts and is not
# changed. Idempotent: a finished sweep or large run is not run again (delete $E2E_DIR to start
# over). Sizes come from environment variables (defaults: `make demo`, see docs/results.md):
#   E2E_DIR (build/tiny-gpt-scaling)  E2E_MODE (study; carbs: the CARBS sweep of earlier versions,
#   extrapolated to E2E_FACTOR x its largest run)  E2E_RUNS (60)  E2E_PARALLEL (2)
#   E2E_FACTOR (10)  E2E_CAP (8e11 FLOP per sweep run; study mode's target is E2E_FACTOR x it)
#   E2E_SEQ (64)  E2E_DMODEL_MIN (32)  E2E_DMODEL_MAX (128)  E2E_LAYER_MIN (1)  E2E_LAYER_MAX (2)
#   E2E_HEAD_DIM (empty: one attention head; K: d_model / K heads, trainer's --head-dim K)
#   E2E_TOKENS_MIN (1e5)  E2E_TOKENS_MAX (2e6)  E2E_WARMUP (0.2; empty: searched)
#   E2E_LR_MIN (1e-4)  E2E_LR_MAX (0.3)  E2E_WD (empty: weight decay searched 1e-3-0.5; a value: fixed)
#   E2E_CURVES (0; 1: scaletune extrapolate --curves)
#   E2E_PRIOR_E (0.69: extrapolate's and report's --prior-e, a prior on the law's irreducible
#   loss in nats per byte: about one bit per character of English text, Shannon 1951; empty: none)
#   E2E_FAR_WEIGHT (0.2: extrapolate's and report's --far-weight; 0: every run weighs 1)
#   E2E_BRANCHES (0; 1: runs train warmup-stable-decay with a checkpoint every E2E_CKPT_EVERY (25)
#   steps and the controller branches cooldowns off each at 40% and 70% of its steps,
#   docs/config.md "Cooldown branches"; extrapolate keeps them as points of their runs)
#   E2E_SEED (3: the sweep's seed)  E2E_SEED_LARGE (1240: the large run's weights' seed; what its
#   one-run sweep drew when the seed was searched)  E2E_THREADS_LARGE (2)  E2E_BOOT (200)  E2E_OPTIMIZER (an optimizer block replacing the mode's)
#   E2E_ALLOW_UNSAFE (0; 1: a recommendation refused as unsafe, exit 3, is trained anyway)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${E2E_DIR:-build/tiny-gpt-scaling}
RUNS=${E2E_RUNS:-60}
MODE=${E2E_MODE:-study}
PAR=${E2E_PARALLEL:-2}
FACTOR=${E2E_FACTOR:-10}
SEQ=${E2E_SEQ:-64}
DMIN=${E2E_DMODEL_MIN:-32}
DMAX=${E2E_DMODEL_MAX:-128}
# depth: 1-2 layers. A large run with one layer lands about 6% above a two-layer one of the same
# compute, which no small run shows (docs/results.md, "2026-11-30"); 2-3 layers (with d_model
# from 16 or 32) were tried and predicted worse there, so the box stays as it was
LMIN=${E2E_LAYER_MIN:-1}
LMAX=${E2E_LAYER_MAX:-2}
TMIN=${E2E_TOKENS_MIN:-1e5}
TMAX=${E2E_TOKENS_MAX:-2e6}
THREADS=${E2E_THREADS_LARGE:-2}
BOOT=${E2E_BOOT:-200}
SEED=${E2E_SEED:-3}
SEED_LARGE=${E2E_SEED_LARGE:-1240}
# warmup: a fixed fraction (default 0.2), or searched when empty (each searched hyperparameter
# costs the engine's model five more parameters). With 0.05, runs at learning rates above ~0.01
# stuck on the loss plateau near 2.3 nats or left it by the luck of the weights' seed (3 of 7
# seeds stuck in one setting); with 0.2 none did, and runs at lower rates lost nothing
# (docs/results.md, "2026-11-30")
WARMUP=${E2E_WARMUP-0.2}
if [ "$LMIN" = "$LMAX" ]; then LAYER_LINE="n_layer: {value: $LMIN}"
else LAYER_LINE="n_layer: {space: linear, min: $LMIN, max: $LMAX, center: $LMIN, integer: true}"; fi
HEADS='"--n-head", "1"'
[ -n "${E2E_HEAD_DIM:-}" ] && HEADS='"--head-dim", "'"$E2E_HEAD_DIM"'"'
LRMIN=${E2E_LR_MIN:-1.0e-4}
LRMAX=${E2E_LR_MAX:-0.3}
LRC=$(awk -v a="$LRMIN" -v b="$LRMAX" 'BEGIN { c = 3e-3; if (c < a || c > b) c = sqrt(a * b); printf "%.4g", c }')
WD=${E2E_WD-}
if [ -n "$WD" ]; then WD_LINE="weight_decay: {value: $WD}"
else WD_LINE="weight_decay: {space: log, min: 1.0e-3, max: 0.5, center: 0.05}"; fi
CURVES=()
[ "${E2E_CURVES:-0}" = 1 ] && CURVES=(--curves)
PRIOR_E=${E2E_PRIOR_E-0.69}
PRIOR=(--far-weight "${E2E_FAR_WEIGHT:-0.2}")
[ -n "$PRIOR_E" ] && PRIOR+=(--prior-e "$PRIOR_E")
BRANCH_ARGS=""
BRANCH_BLOCK=""
if [ "${E2E_BRANCHES:-0}" = 1 ]; then
  BRANCH_ARGS=', "--schedule", "wsd", "--decay-frac", "0.2", "--checkpoint", "{_checkpoint}-{{step}}", "--checkpoint-every", "'"${E2E_CKPT_EVERY:-25}"'"'
  BRANCH_BLOCK='branches: {at: [0.4, 0.7], decay_fraction: 0.2, args: ["--branch-from", "{_parent_checkpoint}-{_branch_step}", "--decay-steps", "{_decay_steps}", "--parent-run", "{_parent_run}"]}'
fi
if [ -n "$WARMUP" ]; then WARMUP_LINE="warmup:  {value: $WARMUP}"
else WARMUP_LINE="warmup:  {space: logit, min: 0.0, max: 0.5, center: 0.05}"; fi
if [ "$MODE" = study ]; then
  CAP=${E2E_CAP:-8e11}
  TARGET=$(awk -v c="$CAP" -v f="$FACTOR" 'BEGIN { printf "%.6g", c * f }')
  # two thirds of the runs from the space-filling design: the acquisition favours the cheapest
  # runs (docs/algorithms/study-mode.md, limits), the byte-level loss plateau on this box
  OPTIMIZER=${E2E_OPTIMIZER:-"optimizer: {goal: extrapolate, target_factor: $FACTOR, initial_design: $((RUNS * 2 / 3))}"}
  XP_TARGET=(--compute "$TARGET"); XP_WHAT="${FACTOR}x the per-run cap ($TARGET FLOP)"
elif [ "$MODE" = carbs ]; then
  CAP=${E2E_CAP:-1.0e16}
  OPTIMIZER=${E2E_OPTIMIZER:-"optimizer: {num_random_samples: 16, search_radius: 0.6}"}
  XP_TARGET=(--factor "$FACTOR"); XP_WHAT="${FACTOR}x the largest run"
else
  echo "tiny-gpt-scaling: E2E_MODE is study or carbs, not '$MODE'" >&2; exit 2
fi
ST=build/scaletune
TRAIN=$PWD/build/scaletune-train
DB=$DIR/study.db
SW=tiny-gpt-scaling
SWL=${E2E_LARGE_SWEEP:-tiny-gpt-scaling-large}
step() { printf '\n== %s\n' "$*"; }

mkdir -p "$DIR"
[ -x "$ST" ] && [ -x "$TRAIN" ] || { echo "tiny-gpt-scaling: build first (make)" >&2; exit 1; }
[ -f data/kjv/train.txt ] || { echo "tiny-gpt-scaling: no data (scripts/prepare-data)" >&2; exit 1; }

# ---- 1. the sweep ------------------------------------------------------------------------
step "1/5 sweep: $RUNS tiny GPTs (d_model $DMIN-$DMAX, $LMIN-$LMAX layers, $TMIN-$TMAX tokens), $PAR at a time"
DC=$(( (DMIN + DMAX) / 2 / 16 * 16 )); [ "$DC" -lt "$DMIN" ] && DC=$DMIN
TC=$(awk -v a="$TMIN" -v b="$TMAX" 'BEGIN { printf "%.4g", sqrt(a * b) }')
cat > "$DIR/sweep.yaml" <<EOF
# generated by examples/tiny-gpt-scaling/run.sh
name: $SW
command: ["$TRAIN", "--d-model", "{d_model}", "--n-layer", "{n_layer}", $HEADS,
          "--tokens", "{tokens}", "--lr", "{lr}", "--warmup", "{warmup}",
          "--weight-decay", "{weight_decay}", "--seed", "{seed}",
          "--seq-len", "$SEQ", "--batch", "16", "--eval-batches", "16", "--threads", "{threads}"$BRANCH_ARGS]
$BRANCH_BLOCK
objective: {metric: val_loss, goal: minimize}
cost: {metric: flops, expr: "6 * (12 * {n_layer} * {d_model}^2 + 256 * {d_model}) * {tokens}"}
parameters:
  d_model: {space: log, min: $DMIN, max: $DMAX, center: $DC, integer: true, rounding: 16}
  $LAYER_LINE
  tokens:  {space: log, min: $TMIN, max: $TMAX, center: $TC}
  lr:      {space: log, min: $LRMIN, max: $LRMAX, center: $LRC}
  $WARMUP_LINE
  $WD_LINE
  # fixed: the trainer's default seed and one thread per run (the large run sets its own)
  seed:    {value: 1337}
  threads: {value: 1}
budget: {runs: $RUNS, max_cost_per_run: $CAP}
parallel: $PAR
retries: {infrastructure: 2, backoff_seconds: 1}
timeouts: {no_metrics_seconds: 600}
seed: $SEED
$OPTIMIZER
EOF
if [ -f "$DB" ] && $ST sweep status --db "$DB" --sweep $SW >/dev/null 2>&1; then
  echo "store $DB has the sweep: resuming (finished runs are kept)"
  $ST sweep resume --db "$DB" --sweep $SW 2>&1 | tail -n 1
else
  $ST sweep launch "$DIR/sweep.yaml" --db "$DB" 2>&1 | tail -n 1
fi
$ST sweep status --db "$DB" --sweep $SW | head -n 12

# ---- 2. scaletune fit: Chinchilla on every successful run (N, D from the final records) ----
step "2/5 scaletune fit: L(N, D) on the sweep's runs (all hyperparameters mixed, for comparison)"
$ST fit --db "$DB" --sweep $SW --law chinchilla --threads 2 || echo "(the naive fit failed; the extrapolation below does not need it)"

# ---- 3. scaletune extrapolate: the recommendation, and the large run as a sweep file -----------
step "3/5 scaletune extrapolate: settings at $XP_WHAT"
# --emit yaml writes the large run as a one-run sweep file of fixed parameters (the recommended
# values, 6 significant digits; d_model and n_layer rounded as the sweep rounds them), with its
# own name, weights' seed and thread count; the text goes to the terminal
XP=(extrapolate --db "$DB" --sweep $SW --config "$DIR/sweep.yaml" "${XP_TARGET[@]}"
    --bootstrap "$BOOT" --out "$DIR/extrapolate.json" "${CURVES[@]}" "${PRIOR[@]}"
    --emit yaml --emit-out "$DIR/large.yaml" --name $SWL --digits 6
    --set seed="$SEED_LARGE" --set threads="$THREADS")
xp_rc=0
$ST "${XP[@]}" > "$DIR/extrapolate.txt" || xp_rc=$?
cat "$DIR/extrapolate.txt"
if [ "$xp_rc" = 3 ] && [ "${E2E_ALLOW_UNSAFE:-0}" = 1 ]; then
  # demo-quick checks the pipeline: its 24 tiny runs cannot vouch for a safe setting
  echo "refused as unsafe (above); E2E_ALLOW_UNSAFE=1: the safest setting is trained anyway"
  $ST "${XP[@]}" --allow-unsafe > "$DIR/extrapolate.txt"
elif [ "$xp_rc" != 0 ]; then
  echo "tiny-gpt-scaling: scaletune extrapolate exited $xp_rc: no large run" >&2
  exit "$xp_rc"
fi

# ---- 4. the large run, as a one-run sweep of the same store --------------------------------
step "4/5 the large run with the recommended settings ($THREADS threads)"
sed -n 's/^  \([a-z_]*\): {value: \(.*\)}$/\1 \2/p' "$DIR/large.yaml" | paste -sd, - | sed 's/,/, /g'
echo "prediction, written before the run ($DIR/extrapolate.json):"
grep '^predicted ' "$DIR/extrapolate.txt"
if $ST sweep status --db "$DB" --sweep $SWL >/dev/null 2>&1; then
  echo "the large run is in the store already"
  $ST sweep resume --db "$DB" --sweep $SWL 2>&1 | tail -n 1 || true
else
  $ST sweep launch "$DIR/large.yaml" --db "$DB" 2>&1 | tail -n 1
fi
$ST sweep export --json --db "$DB" --sweep $SWL --out "$DIR/large.json"

# ---- 5. the report: the large run against the prediction written before it ran ------------------
step "5/5 scaletune report"
$ST report --db "$DB" --sweep $SW --validate-sweep $SWL --expect "$DIR/extrapolate.json" \
  --bootstrap "$BOOT" --out "$DIR/report.html" --json "$DIR/report.json" --md "$DIR/report.md" \
  "${PRIOR[@]}"
echo "report: $DIR/report.html"
echo
echo "done: $DIR/extrapolate.json (recommendation), $DIR/large.yaml (the large run),"
echo "      $DIR/report.json (\"validation\": predicted against actual)"
