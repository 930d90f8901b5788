#!/usr/bin/env bash
# stop.sh - stopping a run from outside and ending it cleanly: SIGTERM and SIGINT to mpirun
# (which forwards them to the ranks and kills them after odls_base_sigkill_timeout) during a
# run whose checkpoint takes a while, SIGUSR1 to mpirun, the STOP file, the wall-clock limit
# and the temporary files a killed run leaves (a file-size limit and the restart of a finished
# run: hostile.sh). Each stop must leave an intact checkpoint from which --restart continues
# bitwise. Prints PASS/FAIL per check; exits non-zero on any failure. EMPIC=path overrides
# the binary (default bin/empic); MPI checks are skipped without mpirun or an MPI build.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh stop
# energy.csv equal in folders $1 and $2
same_rows() { cmp -s "$1/energy.csv" "$2/energy.csv"; }
last_step() { ls "$1"/checkpoint/ckpt*.h5 2> /dev/null | tail -1 | sed 's/.*ckpt0*\([0-9]*\)\.h5/\1/'; }

mpi=0
if command -v mpirun > /dev/null && ! "$EMPIC" --version | grep -q ", no MPI"; then
  mpi=1
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1
fi

# 2.4 M particles: a checkpoint of about 90 MB that takes about a second to write
cat > "$tmp/big.cfg" <<'EOF'
simulation = { name = "big"; backend = "cpu"; seed = 3; };
grid = { cells = [256, 256]; dx = [0.1, 0.1]; cluster = [16, 16]; };
time = { dt = 0.05; steps = 5000; };
species = ( { name = "e"; charge = -1.0; ppc = [6, 6];
              momentum = { thermal = [0.05, 0.05, 0.05]; }; } );
diagnostics = { energy = { every = 10; }; };
EOF
# 262 k particles, 1500 steps: several seconds
cat > "$tmp/small.cfg" <<'EOF'
simulation = { name = "small"; backend = "cpu"; seed = 5; };
grid = { cells = [128, 128]; dx = [0.1, 0.1]; cluster = [16, 16]; };
time = { dt = 0.05; steps = 1500; };
species = ( { name = "e"; charge = -1.0; ppc = [4, 4];
              momentum = { thermal = [0.05, 0.05, 0.05]; }; } );
diagnostics = { energy = { every = 10; }; };
EOF

# wait (at most $2 s) until energy.csv.tmp of folder $1 has a row of step >= 20
wait_rows() {
  for _ in $(seq $(($2 * 10))); do
    [ "$(tail -1 "$1/energy.csv.tmp" 2> /dev/null | cut -d, -f1)" -ge 20 ] 2> /dev/null && return 0
    sleep 0.1
  done
  return 1
}

# mpirun on the big deck into folder $2, signal $1 to mpirun once rows are written: mpirun
# forwards it to the ranks as SIGTERM; the checkpoint must be whole, nothing partial left
stop_mpirun() {
  mpirun -np 2 --mca odls_base_sigkill_timeout 10 "$EMPIC" --quiet --output "$tmp/$2" \
    "$tmp/big.cfg" > "$tmp/$2.log" 2>&1 &
  local pid=$!
  wait_rows "$tmp/$2" 120
  kill -"$1" $pid
  wait $pid
  k=$(last_step "$tmp/$2")
  [ -n "$k" ] && has "$tmp/$2.log" "stopped by SIGTERM after step $k" && \
    [ -z "$(find "$tmp/$2" -name '*.tmp')" ]
  check "SIG$1 to mpirun: checkpoint of step ${k:-none} written whole, nothing partial left" $?
}

# 1. SIGTERM to mpirun with a raised sigkill timeout: the ranks write the checkpoint in time
if [ $mpi = 1 ]; then
  stop_mpirun TERM term
  # what a run killed in mid-write leaves: removed at the restart (empic's own names only)
  touch "$tmp/term/checkpoint/ckpt00099999.h5.tmp" "$tmp/term/timing.json.tmp" \
    "$tmp/term/notes.tmp"
  n=$(( ${k:-0} + 20 ))
  mpirun -np 2 "$EMPIC" --quiet --restart "$tmp/term" --steps $n > "$tmp/term2.log" 2>&1
  rc=$?
  "$EMPIC" --quiet --steps $n --output "$tmp/term-ref" "$tmp/big.cfg" > /dev/null 2>&1
  [ $rc -eq 0 ] && same_rows "$tmp/term" "$tmp/term-ref"
  check "SIGTERM to mpirun: --restart continues bitwise to step $n (rc $rc)" $?
  [ ! -e "$tmp/term/checkpoint/ckpt00099999.h5.tmp" ] && [ ! -e "$tmp/term/timing.json.tmp" ] \
    && [ -e "$tmp/term/notes.tmp" ]
  check "leftover .tmp files of empic removed at the restart, other files kept" $?

  # 1b. Ctrl-C (SIGINT) to mpirun: the same clean stop
  stop_mpirun INT int

  # 2. SIGUSR1 to mpirun: forwarded to the ranks (no kill), exit 138 after the checkpoint
  mpirun -np 2 "$EMPIC" --quiet --output "$tmp/usr1" "$tmp/small.cfg" > "$tmp/usr1.log" 2>&1 &
  pid=$!
  wait_rows "$tmp/usr1" 60
  kill -USR1 $pid
  wait $pid
  rc=$?
  k=$(last_step "$tmp/usr1")
  [ $rc -eq 138 ] && [ -n "$k" ] && has "$tmp/usr1.log" "stopped by SIGUSR1 after step $k"
  check "SIGUSR1 to mpirun: exit 138 (got $rc) with the checkpoint of step ${k:-none}" $?
else
  echo "SKIP: SIGTERM / SIGUSR1 to mpirun (no mpirun, or bin/empic built with MPI=0)"
fi

# 3. the STOP file: present when the run starts, it stops the run after step 1 on every rank
mkdir -p "$tmp/stopf"
touch "$tmp/stopf/STOP"
launch=()
[ $mpi = 1 ] && launch=(mpirun -np 2)
"${launch[@]}" "$EMPIC" --quiet --output "$tmp/stopf" "$tmp/small.cfg" > "$tmp/stopf.log" 2>&1
rc=$?
[ $rc -eq 3 ] && [ -f "$tmp/stopf/checkpoint/ckpt00000001.h5" ] && [ ! -e "$tmp/stopf/STOP" ] \
  && has "$tmp/stopf.log" "stopped by the file .*STOP (removed) after step 1"
check "STOP file: exit 3 (got $rc) after step 1 with a checkpoint, the file removed" $?
"$EMPIC" --quiet --restart "$tmp/stopf" --steps 100 > /dev/null 2>&1 && \
  "$EMPIC" --quiet --steps 100 --output "$tmp/ref100" "$tmp/small.cfg" > /dev/null 2>&1 && \
  same_rows "$tmp/stopf" "$tmp/ref100"
check "STOP file: --restart continues bitwise" $?

# 4. the wall-clock limit: 3 s stop the run in time with a checkpoint; the restart (limit
# off) ends bitwise where the straight run ends; the deck key on several ranks
start=$(date +%s.%N)
"$EMPIC" --quiet --wall-time 3 --output "$tmp/wall" "$tmp/small.cfg" \
  > "$tmp/wall.log" 2>&1
rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
k=$(last_step "$tmp/wall")
[ $rc -eq 3 ] && [ -n "$k" ] && [ "$(echo "$took < 3.0" | bc)" = 1 ] && \
  has "$tmp/wall.log" "stopped by the wall-clock limit of 3 s .* after step $k of"
check "--wall-time 3: exit 3 (got $rc) after ${took}s with the checkpoint of step ${k:-none}" $?
"$EMPIC" --quiet --restart "$tmp/wall" --wall-time 0 > /dev/null 2>&1 && \
  "$EMPIC" --quiet --output "$tmp/wall-ref" "$tmp/small.cfg" > /dev/null 2>&1 && \
  same_rows "$tmp/wall" "$tmp/wall-ref"
check "--wall-time: --restart continues bitwise to the end of the straight run" $?
sed 's/seed = 5; };/seed = 5; wall_time = 3; };/' "$tmp/small.cfg" > "$tmp/wt.cfg"
"${launch[@]}" "$EMPIC" --quiet --output "$tmp/wt" "$tmp/wt.cfg" > "$tmp/wt.log" 2>&1
rc=$?
[ $rc -eq 3 ] && has "$tmp/wt.log" "wall-clock limit of 3 s"
check "simulation.wall_time = 3: exit 3 (got $rc)" $?

echo "stop.sh: $fails failure(s)"
[ $fails -eq 0 ]
