# lib.sh - what the shell tests share, sourced from the repository root as
#   . tests/lib.sh NAME
# the binary ($EMPIC, default bin/empic; the test fails at once without it), OpenMP threads
# (2 unless set), a temporary folder $tmp (/tmp/empic-NAME.XXXXXX, removed at exit) and the
# PASS/FAIL bookkeeping: pass, fail (counted in $fails), check NAME STATUS, has FILE TEXT.
EMPIC=${EMPIC:-bin/empic}
if [ ! -x "$EMPIC" ]; then
  echo "FAIL: $EMPIC not found or not executable (run make first)"
  exit 1
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
tmp=$(mktemp -d "/tmp/empic-$1.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
# check NAME STATUS: PASS when STATUS (of the test command before) is 0
check() { if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1"; fi; }
has() { grep -q -- "$2" "$1"; }
