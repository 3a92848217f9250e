#!/bin/sh
# Extra Docker engines for tests, beside the main one, which is never touched:
# each has its own data root, exec root (and so its own containerd), pidfile,
# socket and log under $LUAGENT_ENGINES_DIR/NAME (default /tmp/luagent-engines),
# with --bridge=none --iptables=false --ip-masq=false, so starting or stopping
# it never changes the host's networking. Sandboxes run with network = none,
# which needs no bridge.
#
#   tests/engines.sh start NAME [--tcp PORT [--tls]] [--runtime runsc]
#                                     start it (idempotent); prints its DOCKER_HOST
#                                     (and, with --tls, sets up certificates made
#                                     with openssl in NAME/certs: use DOCKER_TLS_VERIFY=1
#                                     DOCKER_CERT_PATH=NAME/certs). --runtime runsc:
#                                     its daemon config (NAME/daemon.json, dockerd
#                                     --config-file) registers gVisor's runsc as the
#                                     runtime "runsc" (--platform=ptrace: the KVM
#                                     platform hangs here; --network=none); runc
#                                     stays the default
#   tests/engines.sh host NAME        print its DOCKER_HOST
#   tests/engines.sh stop NAME        stop it (SIGTERM, waits until it is gone)
#   tests/engines.sh kill NAME        kill -9 it and its containerd (an engine that dies)
#   tests/engines.sh image NAME IMAGE copy IMAGE from the main engine into it (skipped
#                                     when present)
#   tests/engines.sh remove NAME      stop it and delete its folder (containers included)
# Needs root and dockerd (docker.io).
set -eu
base=${LUAGENT_ENGINES_DIR:-/tmp/luagent-engines}
cmd=${1:-}; name=${2:-}
[ -n "$cmd" ] && [ -n "$name" ] || { sed -n '2,27p' "$0" >&2; exit 2; }
dir=$base/$name

engine_host() {
  if [ -f "$dir/tcp" ]; then echo "tcp://127.0.0.1:$(cat "$dir/tcp")"; else echo "unix://$dir/docker.sock"; fi
}

# docker CLI pointed at this engine
engine_docker() {
  if [ -f "$dir/tls" ]; then
    DOCKER_HOST=$(engine_host) DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$dir/certs docker "$@"
  else
    DOCKER_HOST=$(engine_host) docker "$@"
  fi
}

answers() { engine_docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

running_pid() {
  [ -f "$dir/docker.pid" ] || return 1
  pid=$(cat "$dir/docker.pid")
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# A CA, a server certificate for 127.0.0.1/localhost and a client certificate,
# in the file names Docker's TLS conventions use (ca.pem, cert.pem, key.pem).
make_certs() {
  c=$dir/certs
  [ -f "$c/server-cert.pem" ] && return 0
  mkdir -p "$c"
  (
    cd "$c"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=luagent-test-ca \
      -keyout ca-key.pem -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server-key.pem -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
      -extfile server.ext -out server-cert.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=luagent-test-client -keyout key.pem -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 \
      -extfile client.ext -out cert.pem 2>/dev/null
    rm -f server.csr client.csr
  )
}

# NAME/daemon.json: empty, or registering runsc (gVisor) for --runtime runsc
daemon_config() {
  case ${1:-} in
    "") echo '{}' > "$dir/daemon.json" ;;
    runsc)
      path=$(command -v runsc) || { echo "engines.sh: --runtime runsc needs gVisor's runsc (apt-get install runsc)" >&2; exit 2; }
      printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": ["--platform=ptrace", "--network=none"]}}}\n' \
        "$path" > "$dir/daemon.json" ;;
    *) echo "engines.sh: --runtime $1: only runsc is known (gVisor)" >&2; exit 2 ;;
  esac
}

start() {
  shift 2
  tcp=""; tls=""; runtime=""
  while [ $# -gt 0 ]; do
    case $1 in
      --tcp) tcp=$2; shift 2 ;;
      --tls) tls=1; shift ;;
      --runtime) runtime=$2; shift 2 ;;
      *) echo "engines.sh: unknown option $1" >&2; exit 2 ;;
    esac
  done
  mkdir -p "$dir/data" "$dir/exec"
  rm -f "$dir/tcp" "$dir/tls"
  [ -n "$tcp" ] && echo "$tcp" > "$dir/tcp"
  [ -n "$tls" ] && touch "$dir/tls"
  daemon_config "$runtime"
  if running_pid >/dev/null && answers; then engine_host; return 0; fi
  listen="-H unix://$dir/docker.sock"
  if [ -n "$tcp" ]; then
    listen="$listen -H tcp://127.0.0.1:$tcp"
    if [ -n "$tls" ]; then
      make_certs
      listen="$listen --tlsverify --tlscacert $dir/certs/ca.pem --tlscert $dir/certs/server-cert.pem --tlskey $dir/certs/server-key.pem"
    fi
  fi
  # shellcheck disable=SC2086
  nohup dockerd --config-file "$dir/daemon.json" --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/docker.pid" $listen \
    --bridge=none --iptables=false --ip-masq=false --ip-forward=false --userland-proxy=false \
    > "$dir/dockerd.log" 2>&1 &
  for _ in $(seq 1 120); do
    answers && { engine_host; return 0; }
    sleep 0.5
  done
  echo "engines.sh: engine $name did not come up within 60 s; the end of $dir/dockerd.log:" >&2
  tail -20 "$dir/dockerd.log" >&2
  exit 1
}

stop() {
  pid=$(running_pid) || return 0
  kill -TERM "$pid"
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  echo "engines.sh: engine $name did not stop within 30 s" >&2
  exit 1
}

# The engine and its own containerd die at once, as when a machine loses them.
kill_engine() {
  pid=$(running_pid) || return 0
  cpid=$(cat "$dir/exec/containerd/containerd.pid" 2>/dev/null || true)
  kill -KILL "$pid" ${cpid:+"$cpid"} 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
}

image() {
  img=${3:?image name}
  # the same image only: a tag the main engine rebuilt (a new sandbox recipe) is copied again
  want=$(docker image inspect -f '{{.Id}}' "$img") || return 1
  [ "$(engine_docker image inspect -f '{{.Id}}' "$img" 2>/dev/null)" = "$want" ] && return 0
  docker save "$img" | engine_docker load >/dev/null
}

case $cmd in
  start) start "$@" ;;
  host) engine_host ;;
  stop) stop ;;
  kill) kill_engine ;;
  image) image "$@" ;;
  remove)
    stop
    # containers' mounts under the data root go with the engine; what is left is files
    umount -R "$dir/data" 2>/dev/null || true
    rm -rf "$dir" ;;
  *) echo "engines.sh: unknown command $cmd" >&2; exit 2 ;;
esac
