#!/usr/bin/env bash
# restart.sh - a run stopped by SIGTERM writes a checkpoint and exits with 143; `empic
# --restart` continues it to the end, and the dumps (fields and particles, tracks by id,
# in-code phase spaces, field probes) and energy.csv are bitwise those of a straight run. Also: --restart
# refuses a deck argument and an empty folder.
# EMPIC=path overrides the binary (default bin/empic from the repo root). BACKEND=cuda runs it
# on the GPU (tools/gpu-test), with the same bitwise checks: the GPU's deposit, sort and
# reductions do not depend on thread scheduling.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh restart
BACKEND=${BACKEND:-cpu}
# a GPU runs the deck in well under a second: longer, so that SIGTERM lands mid-run
if [ "$BACKEND" = cpu ]; then run=("$EMPIC" --backend cpu); else
  run=("$EMPIC" --backend "$BACKEND" --steps 4000); fi

cat > "$tmp/deck.cfg" <<'EOF'
simulation = { name = "restart"; backend = "cpu"; seed = 11; };
grid = { cells = [64, 64]; dx = [0.1, 0.1]; cluster = [16, 16]; };
time = { dt = 0.05; steps = 600; };
species = (
  { name = "up"; charge = -1.0; ppc = [2, 2]; density = { profile = "uniform"; n = 0.5; };
    momentum = { thermal = [0.05, 0.05, 0.05]; drift = [0.0, 0.0, 0.6]; }; },
  { name = "down"; charge = -1.0; ppc = [2, 2]; density = { profile = "uniform"; n = 0.5; };
    momentum = { thermal = [0.05, 0.05, 0.05]; drift = [0.0, 0.0, -0.6]; }; },
  { name = "ions"; charge = 1.0; mass = 1836.0; ppc = [1, 1]; immobile = true; }
);
diagnostics = { output = "unused"; energy = { every = 10; }; fields = { every = 100; };
  particles = { every = 200; fraction = 0.1; }; checkpoint = { every = 20; };
  phasespace = ( { species = "up"; axes = ["x", "uz"]; bins = [32, 32]; every = 100; } );
  tracks = { every = 50; fraction = 0.1; species = ["up", "down"]; };
  probes = ( { name = "p"; at = [3.2, 3.2]; fields = ["Ey", "Bz", "Jx", "rho"]; every = 3; },
             { name = "l"; from = [0.0, 1.0]; to = [6.35, 1.0]; n = 16; } ); };
EOF

"${run[@]}" --quiet --output "$tmp/straight" "$tmp/deck.cfg" > "$tmp/straight.log" 2>&1
[ $? -eq 0 ] && pass "straight run" || fail "straight run: $(tail -3 "$tmp/straight.log")"

# the same run, stopped by SIGTERM once it has passed step 140 (a dump at 100 behind it)
"${run[@]}" --quiet --output "$tmp/cut" "$tmp/deck.cfg" > "$tmp/cut.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  last=$(ls "$tmp/cut/checkpoint/" 2>/dev/null | sed -n 's/^ckpt0*\([0-9][0-9]*\)\.h5$/\1/p' |
         sort -n | tail -1)
  [ "${last:-0}" -ge 140 ] && break
  sleep 0.02
done
kill -TERM $pid
wait $pid
rc=$?
if [ $rc -eq 143 ] && grep -q "continue with: empic --restart" "$tmp/cut.log"; then
  pass "SIGTERM: exit 143 with a checkpoint ($(grep -o 'after step [0-9]*' "$tmp/cut.log"))"
else
  fail "SIGTERM: exit $rc (expected 143); log: $(cat "$tmp/cut.log")"
fi
ls "$tmp/cut/checkpoint/"*.tmp > /dev/null 2>&1 && fail "a temporary checkpoint file is left"

"$EMPIC" --quiet --backend "$BACKEND" --restart "$tmp/cut" > "$tmp/restart.log" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "restart to the end" || fail "restart: exit $rc: $(cat "$tmp/restart.log")"

if cmp -s "$tmp/straight/energy.csv" "$tmp/cut/energy.csv"; then
  pass "energy.csv identical"
else
  fail "energy.csv differs: $(diff "$tmp/straight/energy.csv" "$tmp/cut/energy.csv" | head -5)"
fi

# every dataset of every dump bitwise equal (attributes such as the date may differ); the
# files a run appends to (tracks.h5) hold the same objects and attributes too
if python3 - "$tmp/straight" "$tmp/cut" <<'EOF'
import glob, os, sys
import h5py
import numpy as np
APPENDED = ("tracks.h5", "probes.h5")  # one file per run, appended to
a_top, b_top = sys.argv[1:3]
bad, names = [], []
for sub in ("data", "tracks", "phasespace", "probes"):
    a_dir, b_dir = os.path.join(a_top, sub), os.path.join(b_top, sub)
    sub_names = sorted(os.path.basename(p) for p in glob.glob(a_dir + "/*.h5"))
    assert sub_names and sub_names == sorted(os.path.basename(p)
                                             for p in glob.glob(b_dir + "/*.h5")), sub_names
    names += [sub + "/" + n for n in sub_names]
    for n in sub_names:
        with h5py.File(os.path.join(a_dir, n)) as A, h5py.File(os.path.join(b_dir, n)) as B:
            def visit(key, obj):
                if isinstance(obj, h5py.Dataset):
                    x, y = obj[()], B[key][()]
                    if getattr(x, "shape", None) != getattr(y, "shape", None) or \
                            x.tobytes() != y.tobytes():
                        bad.append(n + ":" + key)
            A.visititems(visit)
            if n in APPENDED:  # a file the restart continued: the same objects and attributes
                ka, kb = [], []
                A.visit(ka.append)
                B.visit(kb.append)
                if ka != kb:
                    bad.append(n + ": objects %s" % sorted(set(ka) ^ set(kb))[:5])
                for key in [None] + ka:
                    oa, ob = (A, B) if key is None else (A[key], B[key])
                    aa = {k: v for k, v in oa.attrs.items() if k != "date"}
                    ab = {k: v for k, v in ob.attrs.items() if k != "date"}
                    if sorted(aa) != sorted(ab) or any(
                            np.asarray(aa[k]).tobytes() != np.asarray(ab[k]).tobytes()
                            for k in aa):
                        bad.append(n + ":" + (key or "/") + " attributes")
print("compared %d dumps; differing datasets: %s" % (len(names), bad or "none"))
sys.exit(1 if bad else 0)
EOF
then
  pass "dumps bitwise equal"
else
  fail "dumps differ"
fi

# the tracks' XDMF series, rebuilt by the restart from the texts kept in tracks.h5
if cmp -s "$tmp/straight/tracks/series.xmf" "$tmp/cut/tracks/series.xmf"; then
  pass "tracks/series.xmf identical"
else
  fail "tracks/series.xmf differs: $(diff "$tmp/straight/tracks/series.xmf" \
    "$tmp/cut/tracks/series.xmf" | head -5)"
fi

out=$("$EMPIC" --restart "$tmp/cut" "$tmp/deck.cfg" 2>&1); rc=$?
[ $rc -eq 2 ] && [[ "$out" == *"deck stored in the checkpoint"* ]] \
  && pass "restart refuses a deck" \
  || fail "restart with a deck: exit $rc: $out"
mkdir -p "$tmp/empty"
out=$("$EMPIC" --restart "$tmp/empty" 2>&1); rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"no intact checkpoint"* ]] && pass "restart from an empty folder" \
  || fail "restart from an empty folder: exit $rc: $out"

if [ $fails -ne 0 ]; then
  echo "restart.sh: $fails failure(s)"
  exit 1
fi
echo "restart.sh: all passed"
