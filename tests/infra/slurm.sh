#!/usr/bin/env bash
# A real single-node SLURM cluster for rlexp's tests, started by hand (no systemd), as root.
#
#   bash tests/infra/slurm.sh start   # munged -> MariaDB -> slurmdbd -> slurmctld -> slurmd; waits for an idle node
#   bash tests/infra/slurm.sh stop    # cancels jobs, stops the daemons by PID (reverse order)
#
# Accounting (slurmdbd + MariaDB) is on because submitit asks `sacct` for the state of jobs that died
# without a result. Idempotent: installs missing Debian packages, starts only daemons that are down.
# State, logs and pid files live under $RLEXP_SLURM_DIR (default /tmp/rlexp-slurm).
set -euo pipefail

ROOT=${RLEXP_SLURM_DIR:-/tmp/rlexp-slurm}
DBPORT=${RLEXP_SLURM_DB_PORT:-3317}
DBPASS=rlexp-slurmdb
CONF=/etc/slurm/slurm.conf
DBDCONF=/etc/slurm/slurmdbd.conf
NODE=$(hostname -s)

say() { echo "[slurm.sh] $*"; }
die() { say "error: $*" >&2; exit 1; }
alive() { # alive PIDFILE NAME: prints the pid when that process runs
  [[ -s $1 ]] || return 1
  local pid; pid=$(tr -dc '0-9' <"$1" | head -c 12)
  [[ -n $pid && -r /proc/$pid/comm && $(cat "/proc/$pid/comm") == "$2"* ]] || return 1
  echo "$pid"
}
until_ok() { # until_ok WHAT CMD...: retries for 90 s
  local what=$1 end=$((SECONDS + 90)); shift
  until "$@" >/dev/null 2>&1; do ((SECONDS < end)) || die "timed out waiting for $what"; sleep 0.3; done
}
halt() { # halt NAME PIDFILE
  local pid
  pid=$(alive "$2" "$1") || return 0
  kill "$pid"
  for _ in $(seq 100); do [[ -d /proc/$pid ]] || { say "stopped $1"; return 0; }; sleep 0.2; done
  kill -9 "$pid"; say "killed $1"
}

start() {
  [[ $(id -u) == 0 ]] || die "run as root"
  if [[ -s $CONF ]] && ! grep -q "^# written by rlexp's tests/infra/slurm.sh" "$CONF"; then
    die "$CONF was not written by this script: this machine has a real SLURM setup, which the tests leave alone"
  fi
  local pkgs=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server) missing=()
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  mkdir -p "$ROOT"/{state,spool,log,db} /etc/slurm /etc/munge /run/munge /var/lib/munge /var/log/munge
  getent hosts "$NODE" >/dev/null || echo "127.0.0.1 $NODE" >>/etc/hosts

  # munge: one key, daemon as the munge user
  [[ -s /etc/munge/munge.key ]] || mungekey --create --keyfile=/etc/munge/munge.key
  chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
  chmod 700 /etc/munge; chmod 600 /etc/munge/munge.key
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged --force
    until_ok munged bash -c 'munge -n | unmunge'
  fi

  # MariaDB for slurmdbd, private to this cluster
  chown mysql:mysql "$ROOT/db"
  if [[ ! -d $ROOT/db/data/mysql ]]; then
    mariadb-install-db --user=mysql --datadir="$ROOT/db/data" --auth-root-authentication-method=socket \
      --skip-test-db >"$ROOT/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed (see $ROOT/log)"
  fi
  local sock=$ROOT/db/mysqld.sock
  if ! mariadb-admin --socket="$sock" ping >/dev/null 2>&1; then
    setsid mariadbd --user=mysql --datadir="$ROOT/db/data" --socket="$sock" --pid-file="$ROOT/db/mysqld.pid" \
      --port="$DBPORT" --bind-address=127.0.0.1 --log-error="$ROOT/log/mariadb.log" \
      --innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
    until_ok MariaDB mariadb-admin --socket="$sock" ping
  fi
  mariadb --socket="$sock" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DBPASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"

  # slurm.conf from the real hardware (slurmd -C); cons_tres so that jobs share the node by cores
  local hw before; hw=$(slurmd -C | head -n1); before=$(cat "$CONF" 2>/dev/null || true)
  cat >"$CONF" <<CONFEOF
# written by rlexp's tests/infra/slurm.sh: one node, no cgroups
ClusterName=rlexp
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
StateSaveLocation=$ROOT/state
SlurmdSpoolDir=$ROOT/spool
SlurmctldPidFile=$ROOT/slurmctld.pid
SlurmdPidFile=$ROOT/slurmd.pid
SlurmctldLogFile=$ROOT/log/slurmctld.log
SlurmdLogFile=$ROOT/log/slurmd.log
MailProg=/bin/true
InactiveLimit=0
# SLURM's default grace time: a cancelled job's run saves its checkpoint after SIGTERM, before SIGKILL
KillWait=30
MinJobAge=300
Waittime=0
${hw% UpTime=*} State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
# a lab's many workers on this one node: up to 4 jobs per core (tests/cluster/test_lab_scale.py's 8 workers)
PartitionName=scale Nodes=$NODE Default=NO MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONFEOF
  cat >"$DBDCONF" <<DBDEOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
LogFile=$ROOT/log/slurmdbd.log
PidFile=$ROOT/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DBPORT
StorageUser=slurm
StoragePass=$DBPASS
StorageLoc=slurm_acct_db
DBDEOF
  chmod 644 "$CONF"; chmod 600 "$DBDCONF"

  if [[ $(cat "$CONF") != "$before" ]] && alive "$ROOT/slurmctld.pid" slurmctld >/dev/null; then
    scontrol reconfigure || die "scontrol reconfigure failed (see $ROOT/log)"  # the running cluster takes the new slurm.conf
  fi
  alive "$ROOT/slurmdbd.pid" slurmdbd >/dev/null || { slurmdbd; until_ok slurmdbd sacctmgr -n list cluster; }
  alive "$ROOT/slurmctld.pid" slurmctld >/dev/null || { slurmctld; until_ok slurmctld bash -c 'scontrol ping | grep -q "is UP"'; }
  alive "$ROOT/slurmd.pid" slurmd >/dev/null || { slurmd; until_ok slurmd alive "$ROOT/slurmd.pid" slurmd; }
  local end=$((SECONDS + 90)) st
  while :; do
    st=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
    case $st in idle|mixed|allocated|completing) break ;; *drain*|*down*) scontrol update NodeName="$NODE" State=RESUME || true ;; esac
    ((SECONDS < end)) || die "node $NODE is '$st' (see $ROOT/log)"
    sleep 0.3
  done
  say "SLURM up: node $NODE $st, partition debug, logs in $ROOT/log"
}

stop() {
  if alive "$ROOT/slurmctld.pid" slurmctld >/dev/null; then
    scancel --user=root 2>/dev/null || true
    for _ in $(seq 50); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.2; done
  fi
  halt slurmd "$ROOT/slurmd.pid"
  halt slurmctld "$ROOT/slurmctld.pid"
  halt slurmdbd "$ROOT/slurmdbd.pid"
  halt mariadbd "$ROOT/db/mysqld.pid"
  halt munged /run/munge/munged.pid
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) die "usage: $0 start|stop" ;;
esac
