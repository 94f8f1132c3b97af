# shellcheck shell=bash
# What scripts/etcd-local.sh, zk-local.sh and redis-local.sh share, sourced by each (not
# run): installing the peer's Debian package and stopping its servers.

# apt_install PACKAGE: install Debian's PACKAGE quietly (through sudo unless root),
# refreshing the package lists and trying again when the first attempt fails (a fresh
# machine has none).
apt_install() {
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null; then
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null
  fi
}

# stop_pids PID...: SIGTERM every process, then SIGKILL whichever still runs 10 s later
# (a server stuck in a sync must not keep its ports from the next system).
stop_pids() {
  local pid deadline
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  deadline=$((SECONDS + 10))
  for pid in "$@"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# need_command WHO COMMAND PACKAGE: install PACKAGE unless COMMAND is on the PATH, and
# fail (WHO names the script) if it is not there afterwards.
need_command() {
  command -v "$2" >/dev/null 2>&1 && return 0
  echo "$1: $2 not found; installing Debian's $3" >&2
  apt_install "$3"
  command -v "$2" >/dev/null 2>&1 || { echo "$1: $2 still missing after install" >&2; exit 1; }
}

# stop_servers KIND PREFIX ID...: stop the servers ID... whose pid_of (the sourcing
# script's) finds them running, saying "stopping KIND PREFIXID (pid N)" for each.
stop_servers() {
  local kind=$1 prefix=$2 id pid name pids=()
  shift 2
  for id in "$@"; do
    if pid=$(pid_of "$id"); then
      pids+=("$pid")
      name=$prefix$id
      echo "stopping $kind${name:+ $name} (pid $pid)"
    fi
  done
  stop_pids "${pids[@]}"
}

# refuse_running WHO PREFIX ID...: exit if any of the servers ID... runs already (a
# second start would wipe the data under a running server).
refuse_running() {
  local who=$1 prefix=$2 id pid name
  shift 2
  for id in "$@"; do
    if pid=$(pid_of "$id"); then
      name=$prefix$id
      echo "$who: ${name:+$name }already running (pid $pid); run stop first" >&2
      exit 1
    fi
  done
}

# wait_ready WHAT SECONDS LOGS CHECK...: run CHECK every 0.3 s, printing a dot each time,
# until it succeeds (returns 0) or SECONDS have passed (says where the logs are, LOGS, and
# returns 1). The caller prints the ready line's detail (a version) after it.
wait_ready() {
  local what=$1 secs=$2 logs=$3 deadline
  shift 3
  deadline=$((SECONDS + secs))
  printf 'waiting for %s' "$what" >&2
  while ((SECONDS < deadline)); do
    if "$@"; then
      printf ' ready' >&2
      return 0
    fi
    printf '.' >&2
    sleep 0.3
  done
  printf ' gave up after %s s; see %s\n' "$secs" "$logs" >&2
  return 1
}
