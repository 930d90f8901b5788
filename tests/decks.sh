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
for f in decks/lwfa.cfg decks/laser-vacuum.cfg decks/lwfa-ionization.cfg; do
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

# what the run would refuse or compute wrongly (deck checks beyond the keys one by one)
reject one-cell-x "grid.cells: 1 cell along x" < <(deck \
  'grid = { cells = [1, 64]; dx = [0.1, 0.1]; };' "$TIME" "$SPECIES")
reject one-cell-y "grid.cells: 1 cell along y" < <(deck \
  'grid = { cells = [64, 1]; dx = [0.1, 0.1]; };' "$TIME" "$SPECIES")
reject narrow-clusters "grid.cluster: 7 cells along x split into 4 clusters" < <(deck \
  'grid = { cells = [7, 5]; dx = [0.1, 0.1]; cluster = [3, 3]; };' "$TIME" "$SPECIES")
reject name-collision '"e+" and species[0]'"'"'s "e-" are both "e_"' < <(deck "$GRID" "$TIME" \
  'species = ( { name = "e-"; charge = -1.0; ppc = [1, 1]; },' \
  '            { name = "e+"; charge = 1.0; ppc = [1, 1]; } );')
reject laser-periodic-side 'lasers[0].boundary: "xmin" is a periodic side' < <(deck "$GRID" \
  "$TIME" 'lasers = ( { a0 = 1.0; omega0 = 2.0; w0 = 1.0; duration = 3.0; } );')
reject tiny-mass "mass: mass = 1e-50 underflows single precision" < <(deck "$GRID" "$TIME" \
  'species = ( { name = "e"; charge = -1.0; mass = 1e-50; ppc = [1, 1]; } );')
reject tiny-w0 "lasers[0].w0: w0 = 1e-300 underflows" < <(deck "$GRID" "$TIME" \
  'fields = { boundary = { xmin = "pml"; xmax = "pml"; }; pml = { cells = 4; }; };' \
  'lasers = ( { a0 = 1.0; omega0 = 2.0; w0 = 1e-300; duration = 3.0; } );')
reject huge-dx "grid.dx: dx = 1e+307 overflows" < <(deck \
  'grid = { cells = [64, 32]; dx = [1e307, 1e307]; };' 'time = { dt = 1e306; steps = 1; };')
reject tiny-dx "grid.dx: dx = 9.99989e-321 underflows" < <(deck \
  'grid = { cells = [64, 32]; dx = [1e-320, 0.1]; };' 'time = { dt = 1e-321; steps = 1; };')
reject nan-density-region "density.expr: density = -nan at (x, y) = (0.4625," < <(deck \
  "$GRID" "$TIME" 'species = ( { name = "e"; charge = -1.0; ppc = [4, 4];' \
  '  density = { profile = "expr"; expr = "(x > 0.45 && x < 0.75) ? sqrt(-1) : 1"; }; } );')
reject infinite-weight "density = inf at (x, y) = (0.05, 0.05)" < <(deck "$GRID" "$TIME" \
  'species = ( { name = "e"; charge = -1.0; ppc = [1, 1];' \
  '  density = { profile = "expr"; expr = "1/abs(x-0.05)"; }; } );')
reject include-empty "include-empty.cfg:2: @include is not supported" < <(deck "$GRID" \
  '@include ""' "$TIME")
reject include-absolute "include-absolute.cfg:1: @include is not supported" < <(deck \
  '  @include "/etc/passwd"' "$GRID" "$TIME")
out=$("$EMPIC" --check /proc/self/mem 2>&1 >/dev/null); rc=$?
if [ $rc -eq 1 ] && [[ "$out" == *"/proc/self/mem: cannot read the deck"* ]]; then
  echo "PASS: unreadable-deck"
else
  echo "FAIL: unreadable-deck (exit $rc: $out)"
  fails=$((fails + 1))
fi

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
