#!/usr/bin/env bash
# run-tests.sh BIN... — runs the test binaries, TEST_JOBS at a time (default: the number of
# cores), shows each one's summary and wall time in the order given, and ends with the total
# line "N passed, N failed" (checks summed over binaries). Exits 1 if any binary fails or
# crashes. TEST_WRAP (e.g. "valgrind -q --error-exitcode=99") is put in front of each binary.
# TEST_JOBS=1 runs them one after another (the Slurm tests share one cluster: Makefile).
set -u
pass=0; fail=0; bad=0
# one BLAS thread unless asked otherwise: deterministic results, and no spinning BLAS threads
# competing with sanitizer-slowed test code on a 2-core machine
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
jobs=${TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
case $jobs in ''|*[!0-9]*|0) echo "run-tests.sh: TEST_JOBS '$jobs' is not a positive integer" >&2; exit 2;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/st-run-tests.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'kill $(jobs -p) 2>/dev/null; exit 130' INT TERM

# one binary: its output in $tmp/N.out, then "rc seconds" in $tmp/N.rc (written last: the mark
# that it has ended)
run_one() {
  local i=$1 t=$2 t0 t1 rc
  t0=$(date +%s.%N)
  ${TEST_WRAP:-} "$t" > "$tmp/$i.out" 2>&1; rc=$?
  t1=$(date +%s.%N)
  printf '%d %s\n' "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" \
    > "$tmp/$i.rc.part" && mv "$tmp/$i.rc.part" "$tmp/$i.rc"
}

# the summary of binary i (its output and status are complete)
report() {
  local i=$1 t=$2 out rc secs line p f s
  out=$(cat "$tmp/$i.out"); read -r rc secs < "$tmp/$i.rc"
  line=$(printf '%s\n' "$out" | grep -E '^[^ ]+: [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  p=$(printf '%s' "$line" | sed -nE 's/.*: ([0-9]+) passed.*/\1/p'); p=${p:-0}
  f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p'); f=${f:-0}
  s=$(printf '%s\n' "$out" | grep -E '^SKIP' | head -n 3)
  pass=$((pass + p)); fail=$((fail + f))
  if [ "$rc" -ne 0 ]; then
    bad=$((bad + 1)); [ "$f" = 0 ] && fail=$((fail + 1))
    printf 'FAIL %s (exit %d, %s s)\n%s\n' "$t" "$rc" "$secs" "$(printf '%s\n' "$out" | tail -n 40)"
  else
    printf 'ok   %-44s %s (%s s)\n' "$t" "${line#*: }" "$secs"
    [ -n "$s" ] && printf '%s\n' "$s"
  fi
}

tests=("$@")
n=${#tests[@]}; next=0; shown=0; running=0
while [ "$shown" -lt "$n" ]; do
  while [ "$running" -lt "$jobs" ] && [ "$next" -lt "$n" ]; do
    run_one "$next" "${tests[$next]}" &
    next=$((next + 1)); running=$((running + 1))
  done
  # the ended binaries (polled: wait -n can miss a job that ended before it was called), shown
  # in the order given
  running=0
  for ((i = shown; i < next; i++)); do [ -f "$tmp/$i.rc" ] || running=$((running + 1)); done
  if [ "$running" -ge "$jobs" ] || { [ "$next" -ge "$n" ] && ! [ -f "$tmp/$shown.rc" ]; }; then
    sleep 0.1; continue
  fi
  while [ "$shown" -lt "$next" ] && [ -f "$tmp/$shown.rc" ]; do
    report "$shown" "${tests[$shown]}"; shown=$((shown + 1))
  done
done
wait
echo "$pass passed, $fail failed"
[ $bad -eq 0 ] && [ $fail -eq 0 ]
