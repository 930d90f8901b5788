#!/usr/bin/env bash
# hostile.sh - what a hostile day brings, from the command line: a disk that fills during a
# dump (injected with a file-size limit, with and without SIGXFSZ ignored, and a 1 MB tmpfs
# when the test may mount one), a damaged newest checkpoint, checkpoints moved or copied out
# of their run folder, a finished run restarted, two
# runs in one output folder, a deck that needs more memory than there is, a deck whose
# profile is bad only where the moving window injects, memory that runs out at any point
# (ulimit -v), and over-long arguments. Each must
# end cleanly with a message that names what and where, the last good checkpoint intact and
# nothing partial left. Prints PASS/FAIL per check; exits non-zero on any failure.
# EMPIC=path overrides the binary (default bin/empic).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh hostile

# 32x32 cells, 16 particles per cell: a particle dump (all particles, 8-byte values) is about
# 1 MB, a checkpoint 0.6 MB
cat > "$tmp/io.cfg" <<'EOF'
simulation = { name = "io"; backend = "cpu"; seed = 2; };
grid = { cells = [32, 32]; dx = [0.1, 0.1]; cluster = [8, 8]; };
time = { dt = 0.05; steps = 60; };
species = ( { name = "e"; charge = -1.0; ppc = [4, 4];
              momentum = { thermal = [0.05, 0.05, 0.05]; }; } );
diagnostics = { energy = { every = 10; }; checkpoint = { every = 20; };
  particles = { every = 30; fraction = 1.0; }; };
EOF

# 1. write failure during a dump: the run to step 20 (checkpoint), then its continuation under
# a file-size limit below the dump's size, so that the dump at step 30 fails (the kernel
# refuses the write, EFBIG; SIGXFSZ ignored as `trap ''` does)
"$EMPIC" --quiet --steps 20 --output "$tmp/full" "$tmp/io.cfg" > /dev/null 2>&1
( trap '' XFSZ; ulimit -f 300; exec "$EMPIC" --quiet --restart "$tmp/full" --steps 60 ) \
  > "$tmp/full.log" 2>&1
rc=$?
[ $rc -eq 1 ] && has "$tmp/full.log" "data/data00000030.h5" && has "$tmp/full.log" "dump not written" \
  && has "$tmp/full.log" "the last checkpoint is intact: .*ckpt00000020.h5"
check "dump write failure: exit 1 (got $rc), the file and the intact checkpoint named" $?
[ -f "$tmp/full/energy.csv" ] && [ -f "$tmp/full/timing.json" ] && \
  [ -z "$(find "$tmp/full" -name '*.tmp')" ] && [ ! -e "$tmp/full/data/data00000030.h5" ]
check "dump write failure: energy.csv and timing.json written, nothing partial left" $?
"$EMPIC" --quiet --restart "$tmp/full" --steps 60 > "$tmp/cont.log" 2>&1 && \
  [ "$(tail -1 "$tmp/full/energy.csv" | cut -d, -f1)" = 50 ] && \
  [ -f "$tmp/full/data/data00000030.h5" ]
check "dump write failure: the run continues from the kept checkpoint" $?

# the same limit with SIGXFSZ not ignored by the shell: empic ignores
# it, so the write fails with EFBIG, the file is named and the run ends cleanly (not 153)
"$EMPIC" --quiet --steps 20 --output "$tmp/fsz" "$tmp/io.cfg" > /dev/null 2>&1
( ulimit -f 300; exec "$EMPIC" --quiet --restart "$tmp/fsz" --steps 60 ) > "$tmp/fsz.log" 2>&1
rc=$?
[ $rc -eq 1 ] && has "$tmp/fsz.log" "data/data00000030.h5" && \
  has "$tmp/fsz.log" "the last checkpoint is intact: .*ckpt00000020.h5"
check "ulimit -f without trap: exit 1 (got $rc, not 153), the file named" $?

# --restart of a finished run: nothing to do, nothing rewritten
"$EMPIC" --quiet --output "$tmp/done" "$tmp/io.cfg" > /dev/null 2>&1
cp -a "$tmp/done" "$tmp/done0"
"$EMPIC" --restart "$tmp/done" > "$tmp/done.log" 2>&1
rc=$?
[ $rc -eq 0 ] && has "$tmp/done.log" "nothing to do: the checkpoint .*ckpt00000060.h5 is at step 60" \
  && diff -r "$tmp/done" "$tmp/done0" > /dev/null
check "--restart of a finished run: exit 0 (got $rc), nothing to do, no file changed" $?

# the same on a 1 MB tmpfs that fills (ENOSPC), where the test may mount one
if command -v unshare > /dev/null && unshare -m true 2> /dev/null; then
  mkdir -p "$tmp/disk"
  unshare -m sh -c "mount -t tmpfs -o size=1m tmpfs '$tmp/disk' && \
    '$EMPIC' --quiet --output '$tmp/disk/o' '$tmp/io.cfg'; echo \$? > '$tmp/disk.rc'; \
    ls -R '$tmp/disk/o' > '$tmp/disk.ls'" > "$tmp/disk.log" 2>&1
  rc=$(cat "$tmp/disk.rc" 2>/dev/null || echo none)
  [ "$rc" = 1 ] && has "$tmp/disk.log" "No space left on device" && has "$tmp/disk.log" "stopped at step" \
    && ! grep -q '\.tmp' "$tmp/disk.ls"
  check "full tmpfs (ENOSPC): exit 1 (got $rc), the file named, the stop message, no .tmp left" $?
else
  echo "SKIP: full tmpfs (this user may not mount one; the file-size limit above covers it)"
fi

# 2. a damaged newest checkpoint: one flipped byte in its data is refused and the older one
# is used; the continuation then matches the straight run
"$EMPIC" --quiet --output "$tmp/straight" "$tmp/io.cfg" > /dev/null 2>&1
cp -r "$tmp/straight" "$tmp/dmg"
f="$tmp/dmg/checkpoint/ckpt00000060.h5"
size=$(stat -c %s "$f")
printf '\x5a' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
"$EMPIC" --quiet --restart "$tmp/dmg" --steps 60 > "$tmp/dmg.log" 2>&1
rc=$?
[ $rc -eq 0 ] && has "$tmp/dmg.log" "ckpt00000060.h5: --restart: skipping this file" && \
  cmp -s "$tmp/dmg/energy.csv" "$tmp/straight/energy.csv"
check "damaged newest checkpoint skipped, the older one continues bitwise (exit $rc)" $?
head -c 4096 "$tmp/straight/checkpoint/ckpt00000040.h5" > "$tmp/cut.h5"
"$EMPIC" --quiet --restart "$tmp/cut.h5" > "$tmp/cut.log" 2>&1
rc=$?
[ $rc -eq 1 ] && has "$tmp/cut.log" "cut.h5: --restart: not an intact empic checkpoint"
check "a truncated checkpoint given by name is refused (exit $rc)" $?

# 2b. checkpoints moved: a run folder copied elsewhere continues in the copy, from any
# folder; a bare folder of checkpoints continues in itself with a note (never in the stored,
# relative output path); a copied checkpoint given back to its own run folder is that run's
abs=$(cd "$(dirname "$EMPIC")" && pwd)/$(basename "$EMPIC")
mkdir -p "$tmp/cwd"
"$EMPIC" --quiet --steps 40 --output "$tmp/half" "$tmp/io.cfg" > /dev/null 2>&1
cp -r "$tmp/half" "$tmp/moved"
( cd "$tmp/cwd" && "$abs" --quiet --restart "$tmp/moved" --steps 60 ) > "$tmp/moved.log" 2>&1
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/moved/energy.csv" "$tmp/straight/energy.csv" && \
  [ ! -e "$tmp/half/checkpoint/ckpt00000060.h5" ] && [ -z "$(ls "$tmp/cwd")" ]
check "a copied run folder continues in the copy, bitwise (exit $rc)" $?
cp -r "$tmp/half/checkpoint" "$tmp/bare"
( cd "$tmp/cwd" && "$abs" --quiet --restart "$tmp/bare" --steps 60 ) > "$tmp/bare.log" 2>&1
rc=$?
[ $rc -eq 0 ] && has "$tmp/bare.log" "not in a run folder's checkpoint/ folder: the run continues in $tmp/bare" && \
  [ -f "$tmp/bare/checkpoint/ckpt00000060.h5" ] && [ -z "$(ls "$tmp/cwd")" ] && \
  [ "$(tail -1 "$tmp/bare/energy.csv")" = "$(tail -1 "$tmp/straight/energy.csv")" ]
check "a bare checkpoint folder continues in itself with a note (exit $rc)" $?
cp "$tmp/half/checkpoint/ckpt00000040.h5" "$tmp/copy.h5"
"$EMPIC" --quiet --restart "$tmp/copy.h5" --output "$tmp/half" --steps 60 > "$tmp/own.log" 2>&1
rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/half/energy.csv" "$tmp/straight/energy.csv"
check "a copied checkpoint continues its own run folder, not 'another run' (exit $rc)" $?

# 3. two runs in one folder: a running one holds the lock; a finished one is not overwritten
# without --overwrite, which clears its files
sed 's/steps = 60;/steps = 100000;/' "$tmp/io.cfg" > "$tmp/long.cfg"
"$EMPIC" --quiet --output "$tmp/busy" "$tmp/long.cfg" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 500); do [ -f "$tmp/busy/run.cfg" ] && break; sleep 0.02; done
"$EMPIC" --quiet --output "$tmp/busy" "$tmp/io.cfg" > "$tmp/busy.log" 2>&1
rc=$?
kill -TERM $pid 2> /dev/null
wait $pid 2> /dev/null
[ $rc -eq 1 ] && has "$tmp/busy.log" "another empic run (process $pid) is writing to this output folder"
check "a second run into a running run's folder is refused (exit $rc)" $?
"$EMPIC" --quiet --output "$tmp/straight" "$tmp/io.cfg" > "$tmp/again.log" 2>&1
rc=$?
[ $rc -eq 1 ] && has "$tmp/again.log" "holds another run" && has "$tmp/again.log" "--overwrite"
check "a new run into a finished run's folder is refused (exit $rc)" $?
touch "$tmp/straight/notes.txt"
sed 's/every = 30;/every = 0;/' "$tmp/io.cfg" > "$tmp/nodump.cfg"
"$EMPIC" --quiet --overwrite --output "$tmp/straight" "$tmp/nodump.cfg" > /dev/null 2>&1 && \
  [ ! -e "$tmp/straight/data/data00000030.h5" ] && [ -f "$tmp/straight/notes.txt" ]
check "--overwrite replaces the old run's files (and only those)" $?

# 4. memory: a deck that needs more than the machine offers is refused before it allocates
cat > "$tmp/big.cfg" <<'EOF'
grid = { cells = [4096, 4096]; dx = [0.1, 0.1]; };
time = { dt = 0.05; steps = 10; };
species = ( { name = "e"; charge = -1.0; ppc = [8, 8]; } );
EOF
EMPIC_MEMORY_LIMIT=2e9 "$EMPIC" --check "$tmp/big.cfg" > "$tmp/big.out" 2> "$tmp/big.log"
rc=$?
[ $rc -eq 1 ] && has "$tmp/big.log" "needs about 3.* GiB of host memory" && \
  has "$tmp/big.log" "1.86 GiB are available (EMPIC_MEMORY_LIMIT)"
check "--check refuses a deck needing more memory than available, with both figures (exit $rc)" $?
start=$(date +%s)
EMPIC_MEMORY_LIMIT=2e9 "$EMPIC" --quiet --output "$tmp/bigrun" "$tmp/big.cfg" > "$tmp/bigrun.log" 2>&1
rc=$?
[ $rc -eq 1 ] && has "$tmp/bigrun.log" "needs about" && [ $(( $(date +%s) - start )) -lt 10 ] && \
  [ ! -e "$tmp/bigrun" ]
check "the run refuses it at once, before creating anything (exit $rc)" $?
sed 's/ppc = \[8, 8\]/ppc = [24, 24]/; s/4096, 4096/8192, 8192/' "$tmp/big.cfg" > "$tmp/slots.cfg"
"$EMPIC" --check "$tmp/slots.cfg" > /dev/null 2> "$tmp/slots.log"
rc=$?
[ $rc -eq 1 ] && has "$tmp/slots.log" "limit of 2^31"
check "--check refuses more particle slots than one species can index (exit $rc)" $?

# 5. a density that is bad only where the moving window injects it: found by --check, with
# the position
cat > "$tmp/inject.cfg" <<'EOF'
grid = { cells = [64, 16]; dx = [0.1, 0.1]; cluster = [8, 8]; };
time = { dt = 0.05; steps = 400; };
fields = { boundary = { xmin = "pml"; xmax = "pml"; ymin = "periodic"; ymax = "periodic"; };
  pml = { cells = 8; }; moving_window = { enabled = true; }; };
species = ( { name = "e"; charge = -1.0; ppc = [2, 2];
  density = { profile = "expr"; expr = "x < 12.5 ? 1 : sqrt(-x)"; }; } );
EOF
"$EMPIC" --check "$tmp/inject.cfg" > /dev/null 2> "$tmp/inject.log"
rc=$?
[ $rc -eq 1 ] && has "$tmp/inject.log" "density.expr: density = -\?nan at (x, y) = (12.525," && \
  has "$tmp/inject.log" "moving window's injection"
check "a density bad only at injection is refused by --check with its position (exit $rc)" $?
"$EMPIC" --quiet --output "$tmp/inject" "$tmp/inject.cfg" > /dev/null 2> "$tmp/inject2.log"
rc=$?
[ $rc -eq 1 ] && has "$tmp/inject2.log" "moving window's injection" && [ ! -e "$tmp/inject" ]
check "... and the run agrees, before it starts (exit $rc)" $?
sed 's/steps = 400;/steps = 100;/' "$tmp/inject.cfg" > "$tmp/inject-short.cfg"
"$EMPIC" --check --steps 400 "$tmp/inject-short.cfg" > /dev/null 2> "$tmp/inject3.log"
rc=$?
[ $rc -eq 1 ] && has "$tmp/inject3.log" "moving window's injection"
check "a --steps that takes the window further is checked again (exit $rc)" $?

# 7. out of memory at any point (ulimit -v from below what the restart needs to above what
# the run needs, in steps): never a crash, the memory named, nothing partial left, and where
# a dump or checkpoint cannot be built after the restart the last checkpoint named intact,
# with energy.csv and timing.json written
cat > "$tmp/oom.cfg" <<'EOF'
simulation = { name = "oom"; backend = "cpu"; seed = 2; };
grid = { cells = [128, 128]; dx = [0.1, 0.1]; cluster = [8, 8]; };
time = { dt = 0.05; steps = 20; };
species = ( { name = "e"; charge = -1.0; ppc = [6, 6];
              momentum = { thermal = [0.05, 0.05, 0.05]; }; } );
diagnostics = { energy = { every = 5; }; checkpoint = { every = 5; };
  particles = { every = 10; fraction = 1.0; }; };
EOF
"$EMPIC" --quiet --steps 5 --output "$tmp/oom" "$tmp/oom.cfg" > /dev/null 2>&1
bad=0 named=0 clean=0
for kb in $(seq 60000 10000 200000); do
  rm -rf "$tmp/oomr" && cp -r "$tmp/oom" "$tmp/oomr"
  ( ulimit -v $kb; OMP_NUM_THREADS=1 exec "$EMPIC" --quiet --restart "$tmp/oomr" --steps 20 ) \
    > "$tmp/oomr.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then clean=$((clean + 1)); continue; fi
  if [ $rc -ne 1 ] || ! has "$tmp/oomr.log" "memory" || [ -n "$(find "$tmp/oomr" -name '*.tmp')" ]; then
    echo "  ulimit -v $kb: exit $rc"; head -3 "$tmp/oomr.log"; bad=$((bad + 1))
  elif has "$tmp/oomr.log" "the last checkpoint is intact: .*ckpt000000[01][05].h5" && \
       [ -f "$tmp/oomr/energy.csv" ] && [ -f "$tmp/oomr/timing.json" ]; then
    named=$((named + 1))
  fi
done
[ $bad -eq 0 ] && [ $named -gt 0 ] && [ $clean -gt 0 ]
check "ulimit -v 60-200 MB: no crash, memory named, nothing partial ($bad bad, $named naming the intact checkpoint, $clean complete)" $?

# 6. over-long arguments are refused, not cut
long=$(printf 'd%.0s' $(seq 1 1100))
"$EMPIC" --quiet --output "$tmp/$long" "$tmp/io.cfg" > /dev/null 2> "$tmp/long.log"
rc=$?
[ $rc -eq 2 ] && has "$tmp/long.log" "characters long; expected at most 1023"
check "an over-long --output is refused (exit $rc)" $?

if [ $fails -ne 0 ]; then
  echo "hostile.sh: $fails failure(s)"
  exit 1
fi
echo "hostile.sh: all passed"
