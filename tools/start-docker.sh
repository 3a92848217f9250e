#!/bin/sh
# Makes sure a Docker engine answers: does nothing when one does (DOCKER_HOST
# or the default socket); as root, starts dockerd in the background and waits
# for it; otherwise says how to start it. Exit 0 when an engine answers.
set -u
answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
answers && exit 0
if [ -n "${DOCKER_HOST:-}" ]; then
  echo "luagent: no Docker engine answers at DOCKER_HOST=$DOCKER_HOST" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "luagent: no Docker engine is running; start it with: sudo systemctl start docker (or sudo dockerd &)" >&2
  exit 1
fi
command -v dockerd >/dev/null || { echo "luagent: dockerd is missing: apt-get install -y docker.io" >&2; exit 1; }
log=/var/log/luagent-dockerd.log
echo "luagent: starting dockerd (log: $log)"
nohup dockerd > "$log" 2>&1 &
for i in $(seq 1 120); do
  answers && exit 0
  sleep 0.5
done
echo "luagent: dockerd did not come up within 60 s; the end of $log:" >&2
tail -20 "$log" >&2
exit 1
