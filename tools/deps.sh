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
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "luagent: missing packages:$missing" >&2
  echo "luagent: run: sudo apt-get install -y$missing" >&2
  exit 1
fi
