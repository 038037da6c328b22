#!/usr/bin/env bash
# Runs a command (an mpirun line), shows its output, and checks it:
#   run_check.sh [--rc N|nonzero] [--env K=V]... [--expect RE]... [--count N RE]... [--reject RE]... -- cmd...
# RE are extended regular expressions matched per line of stdout+stderr.
set -uo pipefail
want_rc=0; expects=(); counts=(); rejects=(); envs=()
while [ $# -gt 0 ]; do
  case $1 in
    --rc) want_rc=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --expect) expects+=("$2"); shift 2 ;;
    --count) counts+=("$2" "$3"); shift 3 ;;
    --reject) rejects+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp); trap 'rm -f "$out"' EXIT
env "${envs[@]}" "$@" >"$out" 2>&1; rc=$?
cat "$out"
fail=0
if [ "$want_rc" = nonzero ]; then
  [ $rc -ne 0 ] || { echo "CHECK FAILED: exit status 0, expected non-zero"; fail=1; }
elif [ $rc -ne "$want_rc" ]; then
  echo "CHECK FAILED: exit status $rc, expected $want_rc"; fail=1
fi
for re in "${expects[@]}"; do
  grep -Eq -- "$re" "$out" || { echo "CHECK FAILED: no line matches /$re/"; fail=1; }
done
for ((i = 0; i < ${#counts[@]}; i += 2)); do
  n=$(grep -Ec -- "${counts[i+1]}" "$out")
  [ "$n" -eq "${counts[i]}" ] || { echo "CHECK FAILED: $n lines match /${counts[i+1]}/, expected ${counts[i]}"; fail=1; }
done
for re in "${rejects[@]}"; do
  if grep -Eq -- "$re" "$out"; then echo "CHECK FAILED: a line matches /$re/"; fail=1; fi
done
exit $fail
