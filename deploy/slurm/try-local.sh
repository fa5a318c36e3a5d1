#!/bin/sh
# Try deploy/slurm/sweep.sbatch on this machine (Debian 12, as root): install
# Slurm and munge from Debian's packages, start a one-node cluster, run the
# README's two commands (an array job of 8 shards over 10,000 seeds of
# scenarios/quickstart.json, then a merge job that depends on it), check that the
# merged report equals a one-machine `asksim sweep --json` over the same seeds
# (wall_s aside), and stop the daemons it started. Not run by CI.
#
#   deploy/slurm/try-local.sh            # from anywhere; builds asksim if needed
#
# It refuses to run where a Slurm or munge daemon already runs (it would collide
# with it), keeps any /etc/slurm/slurm.conf and puts it back, and leaves the
# packages installed. SCENARIO, SEEDS, SHARDS and ASKSIM may be set.
set -eu

cd "$(dirname "$0")/../.."
SCENARIO=${SCENARIO:-scenarios/quickstart.json}
SEEDS=${SEEDS:-0..10000}
SHARDS=${SHARDS:-8}
ASKSIM=${ASKSIM:-$PWD/target/release/asksim}
WAIT_S_MAX=600

say() { printf '== %s\n' "$*"; }
fail() { printf 'try-local: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root: it installs packages and starts daemons"
for daemon in slurmctld slurmd munged; do
    if pgrep -x "$daemon" >/dev/null 2>&1; then
        fail "$daemon already runs here; this script starts its own and would collide with it"
    fi
done
[ -x "$ASKSIM" ] || { say "building asksim"; cargo build --release --quiet; }

say "installing slurm-wlm and munge (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
    # The packages would start their daemons on install; this script starts them
    # itself, so it knows their pids and stops exactly those.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    policy=ours
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
[ "$policy" = ours ] && rm -f /usr/sbin/policy-rc.d
dpkg-query -W slurm-wlm munge

work=$(mktemp -d /tmp/asksim-try-local.XXXXXX)
conf=/etc/slurm/slurm.conf
pids=""
wrote_conf=""
stop() {
    for pid in $pids; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in $pids; do
        while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    done
    if [ -e "$work/slurm.conf.before" ]; then
        cp "$work/slurm.conf.before" "$conf"
    elif [ -n "$wrote_conf" ]; then
        rm -f "$conf"
    fi
    [ -z "$pids" ] || say "stopped what it started (pids$(printf ' %s' $pids))"
}
trap stop EXIT
trap 'exit 130' INT TERM
# Starts a daemon that writes a pid file, and records the pid to stop it later.
started() {
    for _ in $(seq 50); do
        if [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; then
            pids="$(cat "$1") $pids"
            return 0
        fi
        sleep 0.1
    done
    fail "no live pid in $1"
}

say "starting munged"
mkdir -p /run/munge
chown munge:munge /run/munge
[ -s /etc/munge/munge.key ] || fail "no /etc/munge/munge.key (the munge package creates it)"
rm -f /run/munge/munged.pid
runuser -u munge -- /usr/sbin/munged
started /run/munge/munged.pid
munge -n | unmunge | grep -q 'STATUS: *Success' || fail "munge -n | unmunge does not succeed"

say "starting a one-node cluster"
host=$(hostname -s)
memory_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024 / 2) }' /proc/meminfo)
[ -e "$conf" ] && cp "$conf" "$work/slurm.conf.before"
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
chown slurm:slurm /var/spool/slurmctld /var/log/slurm
wrote_conf=yes
cat >"$conf" <<EOF
# Written by asksim's deploy/slurm/try-local.sh; removed when it ends.
ClusterName=asksim-try-local
SlurmctldHost=$host
AuthType=auth/munge
SlurmUser=slurm
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MpiDefault=none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$(nproc) RealMemory=$memory_mb State=UNKNOWN
PartitionName=asksim Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
rm -f /run/slurmctld.pid /run/slurmd.pid
slurmctld -c
started /run/slurmctld.pid
slurmd
started /run/slurmd.pid
for _ in $(seq 100); do
    sinfo -h -o %T | grep -q '^idle$' && break
    sleep 0.2
done
sinfo

results="$work/results"
mkdir -p "$results"
export SCENARIO SEEDS ASKSIM RESULTS="$results"
say "the README's two commands: $SHARDS shards of $SCENARIO over seeds $SEEDS"
start_s=$(date +%s.%N)
jobid=$(sbatch --parsable --array=0-$((SHARDS - 1)) --output="$results/shard-%a.out" deploy/slurm/sweep.sbatch)
mergeid=$(sbatch --parsable --dependency=afterok:"$jobid" --kill-on-invalid-dep=yes \
    --output="$results/merge.out" --wrap "\"$ASKSIM\" merge $results/shard-*.jsonl --json > $results/merged.json")
echo "array job $jobid, merge job $mergeid"
squeue

# A job's state; empty once Slurm has forgotten it.
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n 1; }
waited_s=0
while :; do
    case "$(state "$mergeid")" in
        PENDING | CONFIGURING | RUNNING | COMPLETING | "") ;;
        *) break ;;
    esac
    [ "$waited_s" -lt "$WAIT_S_MAX" ] || fail "the merge job did not end within $WAIT_S_MAX s"
    sleep 1
    waited_s=$((waited_s + 1))
done
end_s=$(date +%s.%N)
merge_state=$(state "$mergeid")
echo "merge job $mergeid: $merge_state, $(awk "BEGIN { printf \"%.1f\", $end_s - $start_s }") s after the first sbatch"
ls "$results"
[ "$merge_state" = COMPLETED ] || fail "the merge job ended $merge_state: see $results/merge.out and $results/shard-*.out"

say "asksim merge (human report)"
"$ASKSIM" merge "$results"/shard-*.jsonl || true

say "checking the merged JSON against one machine's sweep"
"$ASKSIM" sweep "$SCENARIO" --seeds "$SEEDS" --json >"$work/one.json" || true
without_wall() { sed 's/,"wall_s":[0-9.eE+-]*//' "$1"; }
if [ "$(without_wall "$results/merged.json")" = "$(without_wall "$work/one.json")" ]; then
    echo "equal: merge of $SHARDS shards == asksim sweep --json over $SEEDS (wall_s aside)"
else
    diff "$results/merged.json" "$work/one.json" || true
    fail "the merged report differs from one machine's sweep"
fi
echo "results kept in $results"
