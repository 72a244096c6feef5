#!/bin/sh
# bench/costcap.sh — how often the sweep controller refuses or kills a suggestion as over
# budget.max_cost_per_run (failure over_budget), on the "obvious" llmsim sweep of issue 15
# (100 runs, parallel 2, no optimizer block), over seeds, two caps, with and without a cost
# expression. Prints one line per (cost, cap): over_budget per seed, median and worst, as a
# share of the suggestions, and the median best val_loss. Run from the repository root after
# `make` (make bench-costcap does both). Environment: SCALETUNE (the binary, default
# build/scaletune), LLMSIM (default build/bench/llmsim/llmsim), SEEDS (default "1 2 ... 10"),
# CAPS (default "1e16 1e17"), RUNS (default 100), OPTIMIZER (extra YAML, e.g.
# "optimizer: {cost_cap_quantile: 0.95}").
set -eu
SCALETUNE=${SCALETUNE:-build/scaletune}
LLMSIM=$(realpath "${LLMSIM:-build/bench/llmsim/llmsim}")
SEEDS=${SEEDS:-"1 2 3 4 5 6 7 8 9 10"}
CAPS=${CAPS:-"1e16 1e17"}
RUNS=${RUNS:-100}
OPTIMIZER=${OPTIMIZER:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sweep_file() { # $1 seed, $2 cap, $3 cost line
    cat <<EOF
name: user
command: ["$LLMSIM", "--N", "{N}", "--tokens", "{tokens}", "--lr", "{lr}",
          "--batch", "{batch}", "--warmup", "{warmup}", "--weight-decay", "{weight_decay}",
          "--seed", "{_run}"]
objective: {metric: val_loss, goal: minimize}
$3
parameters:
  N:            {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}
  tokens:       {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}
  lr:           {space: log, min: 1.0e-4, max: 0.5, center: 3.0e-3}
  batch:        {space: log, min: 2.0e3, max: 1.0e6, center: 3.0e4}
  warmup:       {space: linear, min: 0.0, max: 0.5, center: 3.0e-3}
  weight_decay: {space: log, min: 1.0e-3, max: 1.0, center: 0.1}
budget: {runs: $RUNS, max_cost_per_run: $2}
parallel: 2
seed: $1
$OPTIMIZER
EOF
}

# median and max of the numbers on stdin
stats() { sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                      printf "%s %s", m, v[NR]}'; }

printf '%-8s %-6s %-34s %9s %9s %10s\n' cost cap "over_budget per seed" median worst best_loss
for variant in reported expr; do
    if [ $variant = expr ]; then
        cost='cost: {metric: flops, expr: "6 * {N} * {tokens}"}'
    else
        cost='cost: {metric: flops}'
    fi
    for cap in $CAPS; do
        counts="" pcts="" bests=""
        for seed in $SEEDS; do
            sweep_file "$seed" "$cap" "$cost" >"$tmp/s.yaml"
            rm -rf "$tmp/s.db"* "$tmp/runs"
            "$SCALETUNE" sweep launch "$tmp/s.yaml" --db "$tmp/s.db" --log-dir "$tmp/runs" \
                >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
            "$SCALETUNE" sweep export --csv --db "$tmp/s.db" >"$tmp/s.csv"
            n=$(awk -F, 'NR > 1' "$tmp/s.csv" | wc -l)
            k=$(awk -F, 'NR > 1 && $3 == "over_budget"' "$tmp/s.csv" | wc -l)
            best=$(awk -F, 'NR > 1 && $2 == "succeeded" {print $4}' "$tmp/s.csv" | sort -g | head -1)
            counts="$counts $k"
            pcts="$pcts $(awk -v k="$k" -v n="$n" 'BEGIN {printf "%.1f", 100 * k / n}')"
            bests="$bests $best"
        done
        set -- $(echo $pcts | tr ' ' '\n' | stats)
        b=$(echo $bests | tr ' ' '\n' | stats | cut -d' ' -f1)
        printf '%-8s %-6s %-34s %8s%% %8s%% %10.4f\n' $variant $cap "$counts" "$1" "$2" "$b"
    done
done
