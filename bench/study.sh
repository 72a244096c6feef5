#!/bin/sh
# bench/study.sh — `make bench-study` (issue 16): the same worlds (bench/sim.h, sim_law_draw),
# sweeps of llmsim written three ways — study mode (`optimizer: {goal: extrapolate,
# target_factor: 100}`), CARBS (no optimizer block, what a newcomer writes) and random search —
# each judged by `scaletune extrapolate` at 100x and 1000x the cap against the oracle
# (bench/bench_extrapolate.c does one mode). Prints one table per arm and a comparison.
#
# An arm is MODE:RUNS[:COST]: the sweep's optimizer (study, best or random), its budget.runs and,
# when given, its budget.cost in FLOPs (the sweep ends at whichever comes first). ARMS lists them;
# the default is the old comparison by runs: "study:$STUDY_RUNS best:$OTHER_RUNS
# random:$OTHER_RUNS" for the modes in MODES. For issue 16's question, study mode against the
# others at equal cost and at three times it (docs/benchmarks.md section 8):
#   ARMS="study:120:1.5e17 best:300:1.5e17 best:300:4.5e17 random:300:1.5e17 random:300:4.5e17"
# Environment: SEEDS (default 20), FIRST_SEED (default 1: worlds FIRST_SEED ..), STUDY_RUNS
# (default 50), OTHER_RUNS (default 150), MODES (default "study best random"), ARMS, JOBS
# (default 2). Run from the repository root after
# `make`.
set -eu
SEEDS=${SEEDS:-20}
FIRST_SEED=${FIRST_SEED:-1}
STUDY_RUNS=${STUDY_RUNS:-50}
OTHER_RUNS=${OTHER_RUNS:-150}
MODES=${MODES:-"study best random"}
JOBS=${JOBS:-2}
B=build/bench
if [ -z "${ARMS:-}" ]; then
    ARMS=""
    for m in $MODES; do
        runs=$OTHER_RUNS
        [ "$m" = study ] && runs=$STUDY_RUNS
        ARMS="$ARMS $m:$runs"
    done
fi
# parse_arm MODE:RUNS[:COST]: sets m, runs, cost ("" when not given) and name (the suffix of
# the arm's work folder and JSON: MODE, or MODE-cCOST)
parse_arm() {
    m=${1%%:*}
    rest=${1#*:}
    runs=${rest%%:*}
    cost=""
    [ "$rest" != "$runs" ] && cost=${rest#*:}
    name=$m
    [ -n "$cost" ] && name="$m-c$cost"
    return 0
}
for arm in $ARMS; do
    parse_arm "$arm"
    echo "== bench-study: arm $arm ($runs runs per sweep${cost:+, budget.cost $cost}), $SEEDS seeds"
    OPENBLAS_NUM_THREADS=1 $B/bench_extrapolate --seeds "$SEEDS" --first-seed "$FIRST_SEED" \
        --jobs "$JOBS" --mode "$m" \
        --runs "$runs" ${cost:+--budget-cost "$cost"} --scaletune build/scaletune \
        --llmsim $B/llmsim/llmsim --work "$B/study-$name" --out "$B/study-$name.json" |
        sed -n '/^| over/,$p'
done
echo
echo "== bench-study: comparison (100x; regret over accepted recommendations)"
printf '| arm | budget.cost | sweep cost (median) | runs (median) | regret median | worst | < 1%% | diverge | refused | +/- (median) |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for arm in $ARMS; do
    parse_arm "$arm"
    python3 - "$B/study-$name.json" "$m" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]["x100"]
pct = lambda x: "-" if x is None else ("inf" if x == "inf" else "%.2f%%" % (100 * x))
runs = [r["runs"] for r in d["seeds"] if isinstance(r.get("runs"), int)]
print("| %s | %s | %.3g | %s | %s | %s | %d of %d | %d | %d | %s |" % (
    sys.argv[2], "%.3g" % d["budget_cost"] if d.get("budget_cost") else "-",
    s["sweep_cost_median"] or 0, "%g" % statistics.median(runs) if runs else "-",
    pct(s["regret_median"]), pct(s["regret_worst"]), s["n_regret_lt_1pct"], len(d["seeds"]),
    s["n_diverged"], s["n_refused"], pct(s["half_width_median"])))
PY
done
