#!/usr/bin/env bash
# bench/soak.sh — `make bench-soak`: the controller killed again and again through a long sweep
# with faults (issue 21). A sweep of SOAK_RUNS (default 10000) runs of the fake trainer, 5% of
# attempts crashing, 2% diverging and 0.1% hanging (killed by the 1 s no-metrics timeout), two
# at a time; the controller is SIGKILLed every SOAK_KILL_MIN..SOAK_KILL_MAX seconds (default
# 2..5) and resumed at once, until a controller finishes the sweep by itself. Then it checks:
#   - PRAGMA integrity_check is ok;
#   - every run ended (none pending or running) and the sweep has exactly SOAK_RUNS runs;
#   - exactly once: each (run, attempt) was launched once (the trainer's own launch log), every
#     stored attempt was launched, each succeeded/failed run has one observation, no other run
#     has one;
#   - no trainer process is left behind.
# It prints runs per minute, the controllers' CPU time per run (user + system of every
# controller process from /proc/PID/stat, its own only: supervisors and trainers are not
# counted; resumes' rebuilds are), and the time a resume
# takes on the finished store (open, rebuild, find nothing to do), median of 5.
# Usage: bench/soak.sh SCALETUNE FAKE_TRAINER [WORKDIR]
set -u
ST=$(readlink -f "$1")
FT=$(readlink -f "$2")
WORK=${3:-build/bench/soak}
RUNS=${SOAK_RUNS:-10000}
KMIN=${SOAK_KILL_MIN:-2}
KMAX=${SOAK_KILL_MAX:-5}
SEED=${SOAK_SEED:-1}
# a previous soak's 10,000 log directories take minutes to delete: moved aside, deleted behind
if [ -e "$WORK" ]; then mv "$WORK" "$WORK.old.$$" && { rm -rf "$WORK.old.$$" & }; fi
mkdir -p "$WORK" || exit 1
WORK=$(readlink -f "$WORK")
DB=$WORK/soak.db
export FAKE_LAUNCH_LOG=$WORK/launches.log
cat > "$WORK/soak.yaml" <<EOF
name: soak
command: ["$FT", "--x", "{x}", "--steps", "1", "--chaos", "0.05,0.001,0.02",
          "--chaos-key", "soak-{_run}-{_attempt}"]
objective: {metric: val_loss, goal: minimize}
cost: {metric: flops}
parameters:
  x: {space: linear, min: -1, max: 1, center: 0}
budget: {runs: $RUNS}
parallel: 2
retries: {infrastructure: 2, backoff_seconds: 0}
timeouts: {no_metrics_seconds: 1}
seed: $SEED
optimizer: {num_random_samples: 100000000}
EOF

RANDOM=$SEED
t0=$(date +%s.%N)
kills=0
cmd=launch
arg=$WORK/soak.yaml
: > "$WORK/cpu.txt"
TCK=$(getconf CLK_TCK)
# the controller's own CPU (utime + stime in /proc/PID/stat: not its children's, so neither the
# supervisors nor the trainers count), sampled until it is killed or ends
cpu_of() { awk -v t="$TCK" '{ sub(/^.*\) /, ""); print ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null; }
while :; do
    "$ST" sweep $cmd $arg --db "$DB" --log-dir "$WORK/logs" > "$WORK/controller.log" 2>&1 &
    pid=$!
    wait_s=$(awk -v a="$KMIN" -v b="$KMAX" -v r=$RANDOM 'BEGIN { printf "%.3f", a + (b - a) * r / 32767 }')
    end=$(awk -v t="$(date +%s.%N)" -v w="$wait_s" 'BEGIN { printf "%.3f", t + w }')
    last=0
    while kill -0 $pid 2>/dev/null && awk -v e="$end" -v t="$(date +%s.%N)" 'BEGIN { exit !(t < e) }'; do
        c=$(cpu_of $pid) && [ -n "$c" ] && last=$c
        sleep 0.05
    done
    if kill -0 $pid 2>/dev/null; then
        c=$(cpu_of $pid) && [ -n "$c" ] && last=$c
        kill -9 $pid
        wait $pid 2>/dev/null
        echo "$last" >> "$WORK/cpu.txt"
        kills=$((kills + 1))
        cmd=resume
        arg="--sweep soak"
        continue
    fi
    wait $pid
    rc=$?
    echo "$last" >> "$WORK/cpu.txt"
    if [ $rc -ne 0 ]; then
        echo "soak: the controller exited $rc:"; tail -5 "$WORK/controller.log"; exit 1
    fi
    break
done
t1=$(date +%s.%N)
sleep 0.5

q() { sqlite3 "$DB" "$1"; }
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: $2 (want $3)"; fail=1; fi; }
check "integrity" "$(q 'PRAGMA integrity_check')" ok
check "runs" "$(q 'SELECT count(*) FROM runs')" "$RUNS"
check "runs not ended" "$(q 'SELECT count(*) FROM runs WHERE status IN (0, 1)')" 0
check "attempts left running" "$(q "SELECT count(*) FROM attempts WHERE state = 'running'")" 0
check "observations of observed runs" "$(q 'SELECT count(*) FROM observations')" \
      "$(q 'SELECT count(*) FROM runs WHERE status IN (2, 3)')"
check "observations of unobserved runs" \
      "$(q 'SELECT count(*) FROM observations o JOIN runs r ON r.id = o.run_id WHERE r.status NOT IN (2, 3)')" 0
dup=$(awk '{ print $1, $2 }' "$FAKE_LAUNCH_LOG" | sort | uniq -d | wc -l)
check "(run, attempt) launched twice" "$dup" 0
# an attempt recorded by a controller killed before its trainer started is `abandoned` on resume
q "SELECT run_id, number FROM attempts WHERE state <> 'abandoned'" | tr '|' ' ' | sort > "$WORK/stored.txt"
awk '{ print $1, $2 }' "$FAKE_LAUNCH_LOG" | sort -u > "$WORK/launched.txt"
check "attempts stored as run but never launched" "$(comm -23 "$WORK/stored.txt" "$WORK/launched.txt" | wc -l)" 0
check "trainers left running" "$(pgrep -f "soak-[0-9]" | wc -l)" 0

# resume on the finished store: open, rebuild, nothing to do
rt=()
for i in 1 2 3 4 5; do
    a=$(date +%s.%N)
    "$ST" sweep resume --sweep soak --db "$DB" --log-dir "$WORK/logs" > /dev/null 2>&1
    b=$(date +%s.%N)
    rt+=("$(awk -v a="$a" -v b="$b" 'BEGIN { print b - a }')")
done
resume=$(printf '%s\n' "${rt[@]}" | sort -g | sed -n 3p)
cpu=$(awk '{ s += $1 } END { print s }' "$WORK/cpu.txt")
awk -v t0="$t0" -v t1="$t1" -v n="$RUNS" -v k="$kills" -v cpu="$cpu" -v res="$resume" \
    -v att="$(q 'SELECT count(*) FROM attempts')" -v ab="$(q "SELECT count(*) FROM attempts WHERE state = 'abandoned'")" \
    -v byst="$(q "SELECT group_concat(status || ':' || c, ' ') FROM (SELECT status, count(*) c FROM runs GROUP BY status)")" \
    'BEGIN {
        w = t1 - t0
        printf "soak: %d runs, %d attempts (%d abandoned by a killed controller before launch), statuses %s, %d controller kills, %.0f s wall\n", n, att, ab, byst, k, w
        printf "soak: %.0f runs per minute; controller CPU %.2f ms per run (target <= 2)\n", 60 * n / w, 1000 * cpu / n
        printf "soak: resume on the finished %d-run store: %.3f s (median of 5; target < 1)\n", n, res
        printf "BENCH soak.runs_per_minute %.1f\nBENCH soak.controller_cpu_ms_per_run %.3f\nBENCH soak.resume_s %.3f\n", 60 * n / w, 1000 * cpu / n, res
    }'
exit $fail
