#!/bin/sh
# Builds the luagent sandbox root filesystem without a registry: debootstrap
# from the Debian mirror this machine's apt already uses, then the same user,
# directories and settings as sandbox/Dockerfile. Writes a tar of the root
# filesystem to OUT_TAR; `luagent sandbox build --offline` imports it.
#
# usage: build-offline.sh OUT_TAR        (as root; needs debootstrap)
set -eu
out=${1:?usage: build-offline.sh OUT_TAR}
suite=bookworm
# nodejs: MCP servers written for node run inside the sandbox (tools.mcp{sandbox = box})
# python3-pip, curl, ca-certificates: code in a sandbox with network rules installs packages
# and fetches files through luagent's proxy; the CA bundle is
# /etc/ssl/certs/ca-certificates.crt, as in the Dockerfile's image
# procps, less: the interactive programs an agent meets under a terminal (box:spawn{tty = true})
packages=python3,python3-numpy,python3-pandas,python3-scipy,python3-matplotlib,nodejs,python3-pip,curl,ca-certificates,procps,less

# The mirror comes from the machine's apt configuration, never from this file.
mirror() {
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      /^URIs:/ { uris = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
      /^$/ { if (ok && uris != "") { print uris; exit } ok = 0; uris = "" }
      END { if (ok && uris != "") print uris }' "$f"
  done | head -1
  [ -f /etc/apt/sources.list ] &&
    awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list
}
url=$(mirror | head -1)
[ -n "$url" ] || { echo "build-offline: no '$suite' mirror in /etc/apt/sources.list(.d)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "build-offline: debootstrap is missing (apt-get install -y debootstrap)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "build-offline: debootstrap needs root" >&2; exit 1; }

root=$(mktemp -d "${TMPDIR:-/var/tmp}/luagent-rootfs-XXXXXX")
trap 'rm -rf "$root"' EXIT
echo "build-offline: debootstrap $suite with $packages (about two minutes)"
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$url" > "$root.log" 2>&1 ||
  { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

# the sandbox user (uid 1000) and its writable workspace
echo "sandbox:x:1000:1000:luagent sandbox:/tmp:/bin/sh" >> "$root/etc/passwd"
echo "sandbox:x:1000:" >> "$root/etc/group"
echo "sandbox:*:19000:0:99999:7:::" >> "$root/etc/shadow"
mkdir -p "$root/workspace"
chown 1000:1000 "$root/workspace"
# a smaller image: package caches and documentation are not needed at run time
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*

tar --numeric-owner -C "$root" -cf "$out" .
echo "build-offline: wrote $out ($(du -h "$out" | cut -f1))"
