#!/usr/bin/env bash
# decks.sh - `empic --check` must reject each broken deck with a non-zero exit and a message
# naming the offending key, and accept a good one. Prints PASS/FAIL per deck; exits non-zero
# on any failure. EMPIC=path overrides the binary (default bin/empic from the repo root).
set -u
cd "$(dirname "$0")/.."
EMPIC=${EMPIC:-bin/empic}
if [ ! -x "$EMPIC" ]; then
  echo "FAIL: $EMPIC not found or not executable (run make first)"
  exit 1
fi
tmp=$(mktemp -d /tmp/empic-decks.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

GRID='grid = { cells = [64, 32]; dx = [0.1, 0.1]; };'
TIME='time = { dt = 0.05; steps = 10; };'
SPECIES='species = ( { name = "electrons"; charge = -1.0; ppc = [2, 2]; } );'

deck() { printf '%s\n' "$@"; }

# reject NAME EXPECTED-TEXT < DECK: the deck must fail with EXPECTED-TEXT in the message
reject() {
  local name=$1 want=$2 deck="$tmp/$1.cfg" out rc
  cat > "$deck"
  out=$("$EMPIC" --check "$deck" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 0 ] && [[ "$out" == *"$want"* ]]; then
    echo "PASS: $name"
  else
    echo "FAIL: $name (exit $rc, expected a message containing '$want'; got: ${out:-nothing})"
    fails=$((fails + 1))
  fi
}

# accept NAME < DECK: the deck must pass --check
accept() {
  local name=$1 deck="$tmp/$1.cfg" out rc
  cat > "$deck"
  out=$("$EMPIC" --check "$deck" 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS: $name"
  else
    echo "FAIL: $name (exit $rc: $out)"
    fails=$((fails + 1))
  fi
}

accept good-deck < <(deck "$GRID" "$TIME" "$SPECIES")
for f in decks/lwfa.cfg decks/laser-vacuum.cfg; do
  accept "$(basename "$f" .cfg)" < "$f"
done

reject syntax-error "syntax-error.cfg:3" < <(deck "$GRID" "$TIME" \
  'species = ( { name = "e"; charge = ; } );')
reject misspelt-key "did you mean 'cells'" < <(deck \
  'grid = { cels = [64, 32]; dx = [0.1, 0.1]; };' "$TIME")
reject dt-above-courant "time.dt" < <(deck "$GRID" 'time = { dt = 0.08; steps = 10; };')
reject negative-ppc "ppc" < <(deck "$GRID" "$TIME" \
  'species = ( { name = "e"; charge = -1.0; ppc = [-2, 2]; } );')
reject bad-formula "density.expr" < <(deck "$GRID" "$TIME" \
  'species = ( { name = "e"; charge = -1.0; ppc = [2, 2];' \
  '            density = { profile = "expr"; expr = "1+sin(2*pi*x/"; }; } );')
reject string-for-dx "grid.dx" < <(deck 'grid = { cells = [64, 32]; dx = "0.1"; };' "$TIME")
reject zero-cells "grid.cells" < <(deck 'grid = { cells = [0, 32]; dx = [0.1, 0.1]; };' "$TIME")
reject binary-garbage "binary-garbage.cfg" < <(head -c 4096 "$EMPIC")   # ELF bytes

out=$("$EMPIC" --check "$tmp/no-such-deck.cfg" 2>&1 >/dev/null); rc=$?
if [ $rc -ne 0 ] && [[ "$out" == *"no-such-deck.cfg"* ]]; then
  echo "PASS: missing-file"
else
  echo "FAIL: missing-file (exit $rc: $out)"
  fails=$((fails + 1))
fi

if [ $fails -ne 0 ]; then
  echo "decks.sh: $fails failure(s)"
  exit 1
fi
echo "decks.sh: all passed"
