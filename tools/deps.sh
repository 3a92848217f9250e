#!/bin/sh
# Installs the Debian packages given as arguments when some are missing.
# As root it runs apt-get; otherwise it prints the exact command to run.
set -eu
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "luagent: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  # One apt at a time: the Kubernetes test cluster's build installs its
  # packages in the background while the test phases install theirs; a second
  # apt-get would fail on dpkg's lock, so each waits its turn (and for any
  # other apt, up to 10 minutes).
  exec 9> /var/lock/luagent-deps.lock
  flock 9
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "luagent: missing packages:$missing" >&2
  echo "luagent: run: sudo apt-get install -y$missing" >&2
  exit 1
fi
