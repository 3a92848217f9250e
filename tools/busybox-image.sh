#!/bin/sh
# Builds a tiny image without Python, offline, for testing the sandbox
# supervisor: a root filesystem holding Debian's static busybox (package
# busybox-static) and its applet symlinks, the sandbox user (uid 1000) and
# /workspace, imported with `docker import`. Skipped when the image exists.
#
# usage: tools/busybox-image.sh [IMAGE]     (default luagent-busybox:test)
set -eu
image=${1:-luagent-busybox:test}
if docker image inspect "$image" >/dev/null 2>&1; then exit 0; fi
dir=$(dirname "$0")
"$dir/deps.sh" busybox-static
root=$(mktemp -d "${TMPDIR:-/tmp}/luagent-busybox-XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/workspace" "$root/proc" "$root/sys" "$root/dev" "$root/run"
cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:luagent sandbox:/tmp:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\nsandbox:x:1000:\n' > "$root/etc/group"
chmod 1777 "$root/tmp"
chown 1000:1000 "$root/workspace"
tar --numeric-owner -C "$root" -cf - . |
  docker import -c 'ENV PATH=/bin' -c 'USER 1000:1000' -c 'WORKDIR /workspace' \
    -c 'CMD ["sleep", "infinity"]' - "$image" >/dev/null
echo "busybox-image: built $image ($(du -sh "$root" | cut -f1))"
