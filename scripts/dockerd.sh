#!/usr/bin/env bash
# Start/stop a private Docker engine for the docker sandbox tests.
#   scripts/dockerd.sh start   install docker.io if missing (root + apt), start dockerd with private dirs
#                              under ${FLYWHEEL_DOCKER_ROOT:-/tmp/flywheel-docker}, wait for its socket, import
#                              the sandbox image if missing. Exit 0 when the engine answers, non-zero (quietly,
#                              reason in $ROOT/why) when it cannot start here.
#   scripts/dockerd.sh stop    stop that engine (only the one we started, by its pid file).
#   scripts/dockerd.sh status  exit 0 when it answers.
# The engine stays off the host's network (--iptables=false --bridge=none); sandboxes use --network none.
set -uo pipefail
ROOT=${FLYWHEEL_DOCKER_ROOT:-/tmp/flywheel-docker}
SOCK="$ROOT/docker.sock"
PIDFILE="$ROOT/docker.pid"
IMAGE=${FLYWHEEL_SANDBOX_IMAGE:-flywheel-sandbox:latest}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

why() { mkdir -p "$ROOT" 2>/dev/null; echo "$*" > "$ROOT/why" 2>/dev/null; [ -n "${VERBOSE:-}" ] && echo "dockerd.sh: $*" >&2; return 1; }
docker_cli() { if command -v docker >/dev/null 2>&1; then docker -H "unix://$SOCK" "$@"; else return 127; fi; }
answers() { [ -S "$SOCK" ] && timeout 10 "${DOCKER_CLI:-docker}" -H "unix://$SOCK" version >/dev/null 2>&1; }

ensure_image() {
  docker_cli image inspect "$IMAGE" >/dev/null 2>&1 && return 0
  local py=/usr/bin/python3 tar="$ROOT/rootfs.tar"
  [ -x "$py" ] || py=python3
  "$py" -I "$repo/flywheel/sandbox/_rootfs.py" "$tar" >/dev/null 2>"$ROOT/rootfs.log" || return 1
  docker_cli import --change 'WORKDIR /work' --change 'ENV PATH=/usr/bin:/bin' "$tar" "$IMAGE" >/dev/null 2>>"$ROOT/rootfs.log" || return 1
  rm -f "$tar"
}

start() {
  mkdir -p "$ROOT" || return 1
  if answers; then ensure_image || why "engine up but the sandbox image could not be built (see $ROOT/rootfs.log)"; return; fi
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { why "dockerd not installed and not root"; return 1; }
    command -v apt-get >/dev/null 2>&1 || { why "dockerd not installed and no apt-get"; return 1; }
    export DEBIAN_FRONTEND=noninteractive
    (apt-get install -y -qq docker.io >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq docker.io >/dev/null 2>&1; }) \
      || { why "apt-get install docker.io failed"; return 1; }
  fi
  [ "$(id -u)" = 0 ] || { why "dockerd needs root here"; return 1; }
  stop >/dev/null 2>&1
  mkdir -p "$ROOT/data" "$ROOT/exec"
  rm -f "$SOCK"
  # setsid: the engine must not share the caller's process group (CI's Ctrl-C, pytest's kill)
  setsid dockerd --data-root "$ROOT/data" --exec-root "$ROOT/exec" -H "unix://$SOCK" --pidfile "$PIDFILE" \
    --iptables=false --ip6tables=false --bridge=none --ip-forward=false --ip-masq=false \
    --userland-proxy=false --log-level=error --containerd-namespace flywheel --containerd-plugins-namespace flywheel-plugins \
    </dev/null >"$ROOT/dockerd.log" 2>&1 &
  for _ in $(seq 1 60); do
    answers && break
    if ! kill -0 $! 2>/dev/null; then why "dockerd exited: $(tail -n 3 "$ROOT/dockerd.log" | tr '\n' ' ')"; return 1; fi
    sleep 0.5
  done
  answers || { stop; why "dockerd did not answer within 30 s"; return 1; }
  ensure_image || { why "could not build the sandbox image (see $ROOT/rootfs.log)"; return 1; }
  rm -f "$ROOT/why"
}

stop() {
  [ -f "$PIDFILE" ] || return 0
  local pid; pid=$(cat "$PIDFILE" 2>/dev/null)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    docker_cli ps -q 2>/dev/null | xargs -r timeout 20 docker -H "unix://$SOCK" rm -f >/dev/null 2>&1
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$PIDFILE" "$SOCK"
  # unmount anything the engine left mounted under our private dirs (never anything else)
  grep -o " $ROOT/[^ ]*" /proc/self/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  return 0
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) answers ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
