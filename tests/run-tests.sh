#!/usr/bin/env bash
# run-tests.sh BIN... — runs each test binary, shows its summary, and ends with the total line
# "N passed, N failed" (checks summed over binaries). Exits 1 if any binary fails or crashes.
# TEST_WRAP (e.g. "valgrind -q --error-exitcode=99") is put in front of each binary.
set -u
pass=0; fail=0; bad=0
# one BLAS thread unless asked otherwise: deterministic results, and no spinning BLAS threads
# competing with sanitizer-slowed test code on a 2-core machine
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
for t in "$@"; do
  out=$(${TEST_WRAP:-} "$t" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^[^ ]+: [0-9]+ passed, [0-9]+ failed' | tail -n 1)
  p=$(printf '%s' "$line" | sed -nE 's/.*: ([0-9]+) passed.*/\1/p'); p=${p:-0}
  f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p'); f=${f:-0}
  s=$(printf '%s\n' "$out" | grep -E '^SKIP' | head -n 3)
  pass=$((pass + p)); fail=$((fail + f))
  if [ $rc -ne 0 ]; then
    bad=$((bad + 1)); [ "$f" = 0 ] && fail=$((fail + 1))
    printf 'FAIL %s (exit %d)\n%s\n' "$t" "$rc" "$(printf '%s\n' "$out" | tail -n 40)"
  else
    printf 'ok   %-44s %s\n' "$t" "${line#*: }"
    [ -n "$s" ] && printf '%s\n' "$s"
  fi
done
echo "$pass passed, $fail failed"
[ $bad -eq 0 ] && [ $fail -eq 0 ]
