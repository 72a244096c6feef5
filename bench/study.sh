#!/bin/sh
# bench/study.sh — `make bench-study` (issue 16): the same worlds (bench/sim.h, sim_law_draw),
# sweeps of llmsim written three ways — study mode (`optimizer: {goal: extrapolate,
# target_factor: 100}`), CARBS (no optimizer block, what a newcomer writes) and random search —
# each judged by `scaletune extrapolate` at 100x and 1000x the cap against the oracle
# (bench/bench_extrapolate.c does one mode). Study mode gets STUDY_RUNS runs; the others get
# OTHER_RUNS (default 3x as many), so that "study mode with a third of the cost" is read off the
# table's sweep-cost row. Prints one table per mode and a comparison. Environment: SEEDS
# (default 20), STUDY_RUNS (default 50), OTHER_RUNS (default 150), MODES (default
# "study best random"), JOBS (default 2). Run from the repository root after `make`.
set -eu
SEEDS=${SEEDS:-20}
STUDY_RUNS=${STUDY_RUNS:-50}
OTHER_RUNS=${OTHER_RUNS:-150}
MODES=${MODES:-"study best random"}
JOBS=${JOBS:-2}
B=build/bench
for m in $MODES; do
    runs=$OTHER_RUNS
    [ "$m" = study ] && runs=$STUDY_RUNS
    echo "== bench-study: mode $m, $runs runs per sweep, $SEEDS seeds"
    OPENBLAS_NUM_THREADS=1 $B/bench_extrapolate --seeds "$SEEDS" --jobs "$JOBS" --mode "$m" \
        --runs "$runs" --scaletune build/scaletune --llmsim $B/llmsim/llmsim \
        --work "$B/study-$m" --out "$B/study-$m.json" | sed -n '/^| over/,$p'
done
echo
echo "== bench-study: comparison (100x; regret over accepted recommendations)"
printf '| mode | runs | sweep cost (median) | regret median | worst | < 1%% | diverge | refused | +/- (median) |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for m in $MODES; do
    python3 - "$B/study-$m.json" "$m" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]["x100"]
pct = lambda x: "-" if x is None else ("inf" if x == "inf" else "%.2f%%" % (100 * x))
print("| %s | %d | %.3g | %s | %s | %d of %d | %d | %d | %s |" % (
    sys.argv[2], d["runs"], s["sweep_cost_median"] or 0, pct(s["regret_median"]),
    pct(s["regret_worst"]), s["n_regret_lt_1pct"], len(d["seeds"]), s["n_diverged"],
    s["n_refused"], pct(s["half_width_median"])))
PY
done
