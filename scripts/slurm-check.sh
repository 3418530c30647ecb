#!/usr/bin/env bash
# Prove qklab's Slurm sweep support end to end on a real, throw-away, single-node Slurm
# cluster on localhost (the classic single-node set-up, but see "Footprint").
#
#   1. stand up munged + slurmctld + slurmd in a scratch folder, wait for the node to be idle
#   2. qklab-cli sweep experiments/sweeps/tiny.json --slurm OUT --points-per-task 2
#      --max-parallel 2 --submit (2 array tasks of 2 points each)
#   3. wait for the job array to leave the queue
#   4. qklab-cli merge OUT/shards/*.db --into a fresh database
#   5. check: 4 runs, all finished, right coordinates per point, sweep record reassembled,
#      and a second merge imports 0 runs
#   6. tear everything down (also on failure / Ctrl-C)
#   7. print PASS/FAIL and the elapsed seconds
#
# Usage: scripts/slurm-check.sh [--cli PATH] [--keep] [--up-timeout S] [--job-timeout S]
#
# Needs: root (for runuser and /run/munge), packages slurm-wlm slurmctld slurmd munge
# (apt-get install -y slurm-wlm slurmctld slurmd munge), python3.
#
# Footprint outside the scratch folder: only /run/munge (munged's socket and pid file, where
# Slurm's auth/munge looks). The munge key, munged's log and seed, slurm.conf (found through
# SLURM_CONF), Slurm's state, spool and logs all live in the scratch folder, so nothing under
# /etc or /var is created or changed. /run/munge is removed again if this script created it.
# Daemons are stopped by the PIDs in their pid files, never by name.
set -Eeuo pipefail

T0=$EPOCHREALTIME
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLI="$REPO/build/app/cli/qklab-cli"
KEEP=0
UP_TIMEOUT=60      # seconds for munged / slurmctld / slurmd to come up and the node to be idle
JOB_TIMEOUT=300    # seconds for the 4-task job array to finish
SWEEP_FILE="$REPO/experiments/sweeps/tiny.json"
SWEEP_NAME=tiny

usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --cli) [[ $# -ge 2 ]] || { echo "slurm-check: --cli needs a path" >&2; exit 2; }
               CLI=$2; shift 2 ;;
        --cli=*) CLI=${1#--cli=}; shift ;;
        --keep) KEEP=1; shift ;;
        --up-timeout|--job-timeout)
               [[ $# -ge 2 ]] || { echo "slurm-check: $1 needs a number of seconds" >&2; exit 2; }
               if [[ $1 == --up-timeout ]]; then UP_TIMEOUT=$2; else JOB_TIMEOUT=$2; fi; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "slurm-check: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

log()  { printf '[slurm-check %6.1fs] %s\n' "$(elapsed)" "$*"; }
elapsed() { awk -v a="$EPOCHREALTIME" -v b="${1:-$T0}" 'BEGIN { printf "%.1f", a - b }'; }
die()  { FAIL_REASON="$*"; echo "slurm-check: FAILED: $*" >&2; exit 1; }

FAIL_REASON=""
SCRATCH=""
OUT=""
T_UP=""
T_JOB=""
CREATED_RUN_MUNGE=0
RUN_MUNGE_WAS=""          # "owner:group mode" of a pre-existing /run/munge that we had to change
MUNGED_STARTED=0
CTLD_STARTED=0
SLURMD_STARTED=0
JOB_ID=""
MUNGE_PIDFILE=/run/munge/munged.pid
MUNGE_SOCKET=/run/munge/munge.socket.2

# ---------------------------------------------------------------- teardown (always)
pid_alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }

# stop_by_pidfile NAME PIDFILE EXPECTED_COMM: SIGTERM the PID in PIDFILE (only if that process
# really is EXPECTED_COMM), wait up to 15 s, then SIGKILL the same PID.
stop_by_pidfile() {
    local name=$1 pidfile=$2 comm=$3 pid actual i t=$EPOCHREALTIME
    [[ -s $pidfile ]] || { echo "  $name: no pid file ($pidfile), nothing to stop"; return 0; }
    pid=$(tr -dc '0-9' < "$pidfile")
    if ! pid_alive "$pid"; then echo "  $name: pid $pid already gone"; return 0; fi
    actual=$(cat "/proc/$pid/comm" 2>/dev/null || true)
    if [[ $actual != "$comm" ]]; then
        echo "  $name: pid $pid from $pidfile is '$actual', not '$comm': leaving it alone" >&2
        return 1
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do pid_alive "$pid" || break; sleep 0.1; done
    if pid_alive "$pid"; then
        echo "  $name: pid $pid ignored SIGTERM for 15 s, sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
        sleep 0.5
    fi
    if pid_alive "$pid"; then echo "  $name: pid $pid still alive!" >&2; return 1; fi
    echo "  $name: stopped (pid $pid, $(elapsed "$t") s)"
}

print_diagnostics() {
    [[ -n $SCRATCH && -d $SCRATCH ]] || return 0
    echo "---------------- diagnostics ----------------"
    if [[ -n $JOB_ID ]]; then
        echo "== scontrol show job $JOB_ID"
        scontrol show job "$JOB_ID" 2>&1 | head -100 || true
    fi
    echo "== sinfo"; sinfo -N -l 2>&1 || true
    local f
    echo "== squeue"; squeue 2>&1 || true
    for f in "${OUT:-/nonexistent}"/logs/*.out; do
        [[ -e $f ]] || { echo "== no task logs in ${OUT:-?}/logs"; break; }
        echo "== task log $f"; tail -n 40 "$f"
    done
    for f in "$SCRATCH/slurm/ctld.log" "$SCRATCH/slurm/d.log" "$SCRATCH/munge/munged.log"; do
        [[ -e $f ]] && { echo "== $f (last 60 lines)"; tail -n 60 "$f"; }
    done
    echo "---------------------------------------------"
}

teardown() {
    local rc=$? ok=1
    set +e
    trap - ERR INT TERM
    [[ $rc -ne 0 ]] && print_diagnostics
    echo "teardown:"
    local t_down=$EPOCHREALTIME
    if [[ -n $JOB_ID && $CTLD_STARTED -eq 1 ]] && squeue -h -j "$JOB_ID" 2>/dev/null | grep -q .; then
        echo "  cancelling job $JOB_ID"
        scancel "$JOB_ID" 2>/dev/null
        for ((i = 0; i < 100; i++)); do
            squeue -h -j "$JOB_ID" 2>/dev/null | grep -q . || break; sleep 0.2
        done
    fi
    if [[ $SLURMD_STARTED -eq 1 ]]; then stop_by_pidfile slurmd "$SCRATCH/slurm/d.pid" slurmd || ok=0; fi
    if [[ $CTLD_STARTED -eq 1 ]]; then stop_by_pidfile slurmctld "$SCRATCH/slurm/ctld.pid" slurmctld || ok=0; fi
    if [[ $MUNGED_STARTED -eq 1 ]]; then stop_by_pidfile munged "$MUNGE_PIDFILE" munged || ok=0; fi
    if [[ $CREATED_RUN_MUNGE -eq 1 ]]; then
        rm -rf /run/munge && echo "  removed /run/munge"
    elif [[ -n $RUN_MUNGE_WAS ]]; then
        rm -f "$MUNGE_PIDFILE" "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
        chown "${RUN_MUNGE_WAS% *}" /run/munge; chmod "${RUN_MUNGE_WAS#* }" /run/munge
        echo "  restored /run/munge to $RUN_MUNGE_WAS"
    fi
    # What is left? (Looked up by name only to report; nothing is killed by name.)
    local left=""
    [[ $MUNGED_STARTED -eq 1 ]] && left=$(ps -eo pid=,comm= | awk '$2 ~ /^(munged|slurmctld|slurmd|slurmstepd)$/' || true)
    if [[ -n $left ]]; then echo "  processes left behind:" >&2; echo "$left" >&2; ok=0; fi
    if [[ -n $SCRATCH && -d $SCRATCH ]]; then
        if [[ $KEEP -eq 1 ]]; then echo "  kept scratch folder $SCRATCH"
        else rm -rf "$SCRATCH" && echo "  removed $SCRATCH"; fi
    fi
    [[ $ok -eq 1 ]] || { echo "  teardown was NOT clean" >&2; [[ $rc -ne 0 ]] || rc=3; }
    local secs; secs=$(elapsed)
    if [[ $rc -eq 0 ]]; then
        echo "PASS: qklab Slurm sweep check (${secs} s in all; cluster up ${T_UP:-?} s, job array ${T_JOB:-?} s, teardown $(elapsed "$t_down") s)"
    else
        echo "FAIL: qklab Slurm sweep check${FAIL_REASON:+: $FAIL_REASON} (${secs} s, exit $rc)"
        [[ $KEEP -eq 1 || -z $SCRATCH ]] || echo "      (rerun with --keep to keep the scratch folder for inspection)"
    fi
    exit "$rc"
}
trap teardown EXIT
trap 'echo "slurm-check: command failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'FAIL_REASON="interrupted"; exit 130' INT
trap 'FAIL_REASON="terminated"; exit 143' TERM

# wait_until TIMEOUT WHAT CMD...: retry CMD every 0.25 s until it succeeds or TIMEOUT s pass.
wait_until() {
    local timeout=$1 what=$2; shift 2
    local deadline=$(( $(date +%s) + timeout ))
    until "$@" >/dev/null 2>&1; do
        (( $(date +%s) < deadline )) || die "timed out after ${timeout}s waiting for $what (raise --up-timeout / --job-timeout if the machine is just slow)"
        sleep 0.25
    done
}

# ---------------------------------------------------------------- preconditions
[[ $(id -u) -eq 0 ]] || die "must run as root (it starts munged with runuser and uses /run/munge)"
need=(munged munge unmunge runuser slurmctld slurmd sinfo sbatch squeue scontrol scancel python3)
missing=()
for c in "${need[@]}"; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
[[ ${#missing[@]} -eq 0 ]] || die "missing commands: ${missing[*]} (apt-get install -y slurm-wlm slurmctld slurmd munge)"
getent passwd munge >/dev/null || die "no 'munge' user (is the munge package installed?)"
[[ -x $CLI ]] || die "qklab-cli not found or not executable: $CLI (use --cli PATH)"
CLI=$(realpath "$CLI")
[[ -f $SWEEP_FILE ]] || die "sweep file missing: $SWEEP_FILE"
[[ $UP_TIMEOUT =~ ^[0-9]+$ && $JOB_TIMEOUT =~ ^[0-9]+$ ]] || die "timeouts must be whole seconds"

# Refuse to run next to an existing munge / Slurm: we would fight over ports, sockets and pid
# files, and we must never stop daemons we did not start. (Looking by name is fine; killing is not.)
if [[ -e $MUNGE_PIDFILE || -S $MUNGE_SOCKET ]]; then
    die "$MUNGE_PIDFILE or $MUNGE_SOCKET exists: a munged seems to be running already; stop it first"
fi
for d in munged slurmctld slurmd slurmstepd; do
    if pids=$(pgrep -x "$d"); then
        die "a $d is already running (pid(s) $(echo $pids)); this check needs a machine without one"
    fi
done

# ---------------------------------------------------------------- 1. the cluster
SCRATCH=$(mktemp -d /tmp/slurm-check.XXXXXX)
chmod 711 "$SCRATCH"                     # munged (user munge) must reach $SCRATCH/munge
OUT="$SCRATCH/sweep"
DB="$SCRATCH/merged.db"
log "scratch folder $SCRATCH, qklab-cli $CLI"

# munge: key, log and seed in a munge-owned scratch folder; socket + pid in /run/munge.
install -d -o munge -g munge -m 700 "$SCRATCH/munge"
dd if=/dev/urandom of="$SCRATCH/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$SCRATCH/munge/munge.key"; chmod 400 "$SCRATCH/munge/munge.key"
if [[ ! -d /run/munge ]]; then
    install -d -o munge -g munge -m 755 /run/munge; CREATED_RUN_MUNGE=1
elif [[ $(stat -c %U /run/munge) != munge ]]; then
    RUN_MUNGE_WAS="$(stat -c '%U:%G %a' /run/munge)"
    chown munge:munge /run/munge; chmod 755 /run/munge
fi
MUNGED_STARTED=1
runuser -u munge -- /usr/sbin/munged \
    --key-file="$SCRATCH/munge/munge.key" \
    --log-file="$SCRATCH/munge/munged.log" \
    --seed-file="$SCRATCH/munge/munged.seed" \
    || die "munged did not start (see $SCRATCH/munge/munged.log)"
wait_until "$UP_TIMEOUT" "munged's pid file" test -s "$MUNGE_PIDFILE"
munge_ok() { munge -n | unmunge | grep -q 'STATUS: *Success'; }
wait_until "$UP_TIMEOUT" "munge -n | unmunge to report Success" munge_ok
log "munged up (pid $(cat "$MUNGE_PIDFILE"))"

# slurm.conf in the scratch folder; every Slurm command and daemon finds it through SLURM_CONF.
HOST=$(hostname -s)
mkdir -p "$SCRATCH/slurm/state" "$SCRATCH/slurm/spool"
# The node's hardware exactly as slurmd sees it (CPUs, sockets, cores, threads), so it is not
# drained for "Low socket*core*thread count"; memory a little below the real amount.
NODE_HW=$(slurmd -C 2>/dev/null | head -n 1 | tr ' ' '\n' \
          | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ' || true)
MEM_MB=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
[[ -n $NODE_HW ]] || NODE_HW="CPUs=$(nproc)"
export SLURM_CONF="$SCRATCH/slurm/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=qkcheck
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$SCRATCH/slurm/state
SlurmdSpoolDir=$SCRATCH/slurm/spool
SlurmctldLogFile=$SCRATCH/slurm/ctld.log
SlurmdLogFile=$SCRATCH/slurm/d.log
SlurmctldPidFile=$SCRATCH/slurm/ctld.pid
SlurmdPidFile=$SCRATCH/slurm/d.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$HOST NodeAddr=127.0.0.1 ${NODE_HW}RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF

CTLD_STARTED=1
/usr/sbin/slurmctld || die "slurmctld did not start (see $SCRATCH/slurm/ctld.log)"
wait_until "$UP_TIMEOUT" "slurmctld to answer (scontrol ping)" bash -c 'scontrol ping | grep -q UP'
SLURMD_STARTED=1
/usr/sbin/slurmd || die "slurmd did not start (see $SCRATCH/slurm/d.log)"
node_idle() { [[ $(sinfo -h -n "$HOST" -o '%t' 2>/dev/null) == idle ]]; }
wait_until "$UP_TIMEOUT" "node $HOST to be idle in sinfo" node_idle
T_UP=$(elapsed)
log "cluster up: $(sinfo -h -o '%P %a %D %t %N')"

# ---------------------------------------------------------------- 2. submit the sweep
submit_out="$SCRATCH/submit.stdout"; submit_err="$SCRATCH/submit.stderr"
# Two points per array task (--points-per-task 2): 2 tasks, each running its points in turn.
if ! "$CLI" sweep "$SWEEP_FILE" --slurm "$OUT" --points-per-task 2 --max-parallel 2 --submit >"$submit_out" 2>"$submit_err"; then
    cat "$submit_err" >&2
    die "qklab-cli sweep --slurm --submit failed"
fi
sed 's/^/  qklab-cli: /' "$submit_err"
JOB_ID=$(tr -d '[:space:]' < "$submit_out")
JOB_ID=${JOB_ID%%;*}                     # sbatch --parsable may print "jobid;cluster"
[[ $JOB_ID =~ ^[0-9]+$ ]] || die "expected a job id on stdout of --submit, got: '$(cat "$submit_out")'"
log "submitted job array $JOB_ID"

# What qklab wrote: 4 configs, a 2-task array throttled to 2, logs in OUT/logs.
for i in 0 1 2 3; do [[ -f $OUT/configs/point-$i.json ]] || die "missing $OUT/configs/point-$i.json"; done
[[ ! -e $OUT/configs/point-4.json ]] || die "more than 4 point configs in $OUT/configs"
grep -qx '#SBATCH --array=0-1%2' "$OUT/sweep.sbatch" || die "sweep.sbatch has no '#SBATCH --array=0-1%2'"

# ---------------------------------------------------------------- 3. wait for it
job_gone() {
    local q
    if q=$(squeue -h -j "$JOB_ID" 2>&1); then [[ -z $q ]]
    else grep -qi 'invalid job id' <<<"$q"; fi   # already purged from the controller
}
T_SUB=$EPOCHREALTIME
wait_until "$JOB_TIMEOUT" "job array $JOB_ID to finish" job_gone
T_JOB=$(elapsed "$T_SUB")
# Per-task end state (kept by slurmctld for MinJobAge=300 s).
# One line per array task: "task=N state=S exit=E".
task_states() {
    scontrol -o show job "$JOB_ID" 2>/dev/null | awk '{
        t = "?"; st = "?"; ex = "?"
        for (i = 1; i <= NF; i++) {
            split($i, kv, "=")
            if (kv[1] == "ArrayTaskId") t = kv[2]
            else if (kv[1] == "JobState") st = kv[2]
            else if (kv[1] == "ExitCode") ex = kv[2]
        }
        print "task=" t " state=" st " exit=" ex }' | sort -t= -k2 -n
}
states=$(task_states || true)
log "job array $JOB_ID left the queue after ${T_JOB}s: $(echo $states)"
[[ $(grep -c 'state=COMPLETED exit=0:0' <<<"$states") -eq 2 ]] \
    || die "not both array tasks COMPLETED with exit 0: $(grep -v 'state=COMPLETED exit=0:0' <<<"$states" | tr '\n' ';')"

# ---------------------------------------------------------------- 4. merge
shards=("$OUT"/shards/point-*.db)
[[ ${#shards[@]} -eq 4 && -f ${shards[0]} ]] || die "expected 4 shard databases in $OUT/shards, found: $(ls "$OUT/shards" 2>&1 | tr '\n' ' ')"
"$CLI" merge "${shards[@]}" --into "$DB" >"$SCRATCH/merge1.out" 2>&1 || { cat "$SCRATCH/merge1.out"; die "first merge failed"; }
sed 's/^/  merge: /' "$SCRATCH/merge1.out"

# ---------------------------------------------------------------- 5. checks
"$CLI" list --json --db "$DB" > "$SCRATCH/list.json"            || die "qklab-cli list --json failed"
"$CLI" sweeps --json --db "$DB" > "$SCRATCH/sweeps.json"        || die "qklab-cli sweeps --json failed"
"$CLI" sweep-report "$SWEEP_NAME" --json --db "$DB" > "$SCRATCH/report.json" \
                                                                 || die "qklab-cli sweep-report --json failed"
"$CLI" merge "${shards[@]}" --into "$DB" >"$SCRATCH/merge2.out" 2>&1 || { cat "$SCRATCH/merge2.out"; die "second merge failed"; }
"$CLI" list --json --db "$DB" > "$SCRATCH/list2.json"           || die "qklab-cli list --json (after 2nd merge) failed"

python3 - "$SCRATCH" "$SWEEP_NAME" <<'PY' || die "result checks failed (see above)"
import json, re, sys, os
d, name = sys.argv[1], sys.argv[2]
load = lambda f: json.load(open(os.path.join(d, f)))
errors = []
def check(cond, msg):
    print(("  ok   " if cond else "  FAIL ") + msg)
    if not cond: errors.append(msg)

runs = load("list.json")
check(len(runs) == 4, f"merged database has 4 runs (has {len(runs)})")
check(all(r.get("status") == "finished" for r in runs),
      "all runs finished (" + ", ".join(f"{r.get('name')}: {r.get('status')}" for r in runs) + ")")
check(all(r.get("steps_done") == 30 for r in runs), "every run did its 30 steps")

sweeps = load("sweeps.json")
check(len(sweeps) == 1, f"1 sweep in the merged database (has {len(sweeps)})")
if sweeps:
    s = sweeps[0]
    check(s.get("name") == name, f"sweep name is {name!r} ({s.get('name')!r})")
    check(s.get("points") == 4, f"sweep has 4 points ({s.get('points')})")
    check(s.get("finished") == 4, f"sweep counts 4 finished points ({s.get('finished')})")
    check(s.get("status") == "finished", f"sweep status is finished ({s.get('status')!r})")

rep = load("report.json")
# The grid, in qklab's point order (axes by key: attention.qk_norm outer, optim.lr inner).
want = {0: ("none", 0.003), 1: ("none", 0.03), 2: ("rms", 0.003), 3: ("rms", 0.03)}
pts = {p.get("point"): p for p in rep.get("points", [])}
check(sorted(pts) == [0, 1, 2, 3], f"sweep-report lists points 0..3 ({sorted(pts)})")
run_ids = {r.get("id") for r in runs}
for i, (qk, lr) in want.items():
    p = pts.get(i, {})
    c = p.get("coords", {})
    check(c.get("attention.qk_norm") == qk and isinstance(c.get("optim.lr"), (int, float))
          and abs(c["optim.lr"] - lr) < 1e-12 and len(c) == 2,
          f"point {i} coords qk_norm={qk} lr={lr} ({c})")
    check(p.get("state") == "finished", f"point {i} state finished ({p.get('state')!r})")
    check(p.get("run_id") in run_ids, f"point {i} links to a merged run (run_id {p.get('run_id')})")
ids = [p.get("run_id") for p in pts.values()]
check(len(set(ids)) == 4, f"the 4 points link to 4 distinct runs ({ids})")

m2 = open(os.path.join(d, "merge2.out")).read()
mm = re.search(r"^(\d+) runs? imported.*$", m2, re.M)
check(mm is not None and int(mm.group(1)) == 0,
      f"re-running the merge imports 0 runs ({mm.group(0) if mm else 'no summary line: ' + m2.strip()!s})")
runs2 = load("list2.json")
check(len(runs2) == 4, f"still 4 runs after the second merge ({len(runs2)})")
sys.exit(1 if errors else 0)
PY
log "all checks passed"
exit 0
