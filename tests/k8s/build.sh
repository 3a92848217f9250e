# tests/k8s/build.sh: the build of the test cluster (sourced by tests/k8s.sh,
# whose settings it uses): Debian's kubernetes source package built with Go,
# etcd unpacked from its .deb, the pause image compiled from C. See tests/k8s.sh.
# shellcheck shell=bash

# ---------------------------------------------------------------- build

# the arguments that are files, one a line
existing() { local f; for f in "$@"; do [ -f "$f" ] && echo "$f"; done; return 0; }

# A private apt configuration: the machine's own Debian entries (the suites of
# this release), each as both deb and deb-src, with their own lists and cache.
apt_private_setup() {
  local a=$CACHE/apt codename
  mkdir -p "$a/etc/sources.list.d" "$a/lists/partial" "$a/cache/archives/partial"
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  # one-line entries: keep "deb" lines of this release, add their deb-src twin
  existing /etc/apt/sources.list /etc/apt/sources.list.d/*.list | xargs -r cat |
    awk -v cn="$codename" '$1 == "deb" {
      n = 2; if ($2 ~ /^\[/) { while ($n !~ /\]$/) n++; n++ }
      s = $(n + 1)
      if (s == cn || index(s, cn "-") == 1) { print; sub(/^deb/, "deb-src"); print } }' \
    > "$a/etc/sources.list"
  # deb822 entries: the stanzas naming a suite of this release, as deb and deb-src
  existing /etc/apt/sources.list.d/*.sources | xargs -r cat | awk -v cn="$codename" '
    function flush() {
      if (keep && enabled && types ~ /(^|[ \t])deb([ \t]|$)/) { print "Types: deb deb-src"; printf "%s\n", body }
      body = ""; keep = 0; types = ""; enabled = 1 }
    BEGIN { enabled = 1 }
    /^#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[^ \t]/ { key = tolower($1) }
    key == "types:" && /^[^ \t]/ { types = $0; sub(/^[^:]*:/, "", types); next }
    key == "suites:" && /^[^ \t]/ { for (i = 2; i <= NF; i++) if ($i == cn || index($i, cn "-") == 1) keep = 1 }
    key == "enabled:" && /^[^ \t]/ && tolower($2) == "no" { enabled = 0 }
    { body = body $0 "\n" }
    END { flush() }' > "$a/etc/sources.list.d/private.sources"
  [ -s "$a/etc/sources.list" ] || [ -s "$a/etc/sources.list.d/private.sources" ] ||
    die "no Debian $codename entry in /etc/apt/sources.list{,.d}"
}

# apt-get with the private configuration
apt_private() {
  local a=$CACHE/apt
  apt-get -q -o Dir::Etc::SourceList="$a/etc/sources.list" \
    -o Dir::Etc::SourceParts="$a/etc/sources.list.d" -o Dir::State::Lists="$a/lists" \
    -o Dir::Cache="$a/cache" -o APT::Sandbox::User=root "$@"
}

apt_private_update() {
  [ -f "$CACHE/apt/updated" ] && return 0
  apt_private_setup
  apt_private update -qq >&2
  touch "$CACHE/apt/updated"
}

# apt_private_get DIR ARG...: apt-get ARG... (source or download) in DIR, with
# the lists renewed once when they are too old for the mirror
apt_private_get() {
  local dir=$1; shift
  apt_private_update
  (cd "$dir" && apt_private "$@" >/dev/null 2>&1) && return 0
  rm -f "$CACHE/apt/updated"
  apt_private_update
  (cd "$dir" && apt_private "$@" >/dev/null) || die "apt-get $* failed"
}

# kubernetes' source, patched, in $SRC
fetch_source() {
  [ -f "$SRC/.luagent-patched" ] && return 0
  local dl=$CACHE/src/download
  rm -rf "$dl" "$SRC" && mkdir -p "$dl"
  apt_private_get "$dl" source --download-only kubernetes
  # dpkg-source applies debian/patches (format 3.0 (quilt))
  dpkg-source --no-check -x "$dl"/kubernetes_*.dsc "$SRC" >/dev/null
  sed -n '1s/.*(\(.*\)).*/\1/p' "$SRC/debian/changelog" > "$SRC/.luagent-debian-version"
  # vendored reflect2 1.0.1 crashes with Go >= 1.18: use Debian's 1.0.2
  rm -rf "$SRC/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$SRC/vendor/github.com/modern-go/reflect2"
  find "$SRC/vendor/github.com/modern-go/reflect2" -name '*_test.go' -delete
  touch "$SRC/.luagent-patched"
}

# The generated OpenAPI definitions (not in the release tarball), with
# kubernetes' own make rule, as `make WHAT=...` would (it needs rsync)
generate_openapi() {
  [ -f "$SRC/.luagent-generated" ] && return 0
  fetch_source
  (cd "$SRC" && PATH=$(dirname "$GO"):$PATH make gen_openapi > "$SRC/.luagent-generate.log" 2>&1) ||
    die_log "make gen_openapi failed" "$SRC/.luagent-generate.log"
  touch "$SRC/.luagent-generated"
}

# kube-apiserver, -controller-manager, -scheduler, kubelet and kubectl in $BIN
build_kube() {
  local b missing="" version
  for b in $KUBE_BINARIES; do [ -x "$BIN/$b" ] || missing="$missing ./cmd/$b"; done
  [ -z "$missing" ] && return 0
  generate_openapi
  mkdir -p "$BIN" "$CACHE/go/cache" "$CACHE/go/path"
  # 1.20.5+really1.20.2-1.1+deb12u1 -> v1.20.2
  version=v$(sed 's/.*really//; s/-.*//' "$SRC/.luagent-debian-version")
  # GOPATH mode: the vendored package's import path
  local pkg=k8s.io/kubernetes/vendor/k8s.io/component-base/version ldflags minor
  minor=$(echo "$version" | cut -d. -f2)
  ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor \
    -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  # GOPATH mode with vendor/, as kubernetes' own make (hack/lib/golang.sh) and
  # Debian's build do: in module mode Go 1.19 finds go.mod inconsistent
  local gopath=$CACHE/go/path
  mkdir -p "$gopath/src/k8s.io"
  ln -sfn "$SRC" "$gopath/src/k8s.io/kubernetes"
  # shellcheck disable=SC2086
  (cd "$gopath/src/k8s.io/kubernetes" && GOCACHE=$CACHE/go/cache GOPATH=$gopath \
    GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=0 \
    "$GO" build -trimpath -ldflags "$ldflags" -o "$BIN/" $missing) ||
    die "go build failed"
}

# etcd from its Debian package, unpacked (no daemon)
fetch_debs() {
  [ -x "$BIN/etcd" ] && return 0
  local d=$CACHE/debs
  rm -rf "$d" && mkdir -p "$d/root" "$BIN"
  apt_private_get "$d" download etcd-server
  dpkg-deb -x "$d"/etcd-server_*.deb "$d/root"
  cp "$d/root/usr/bin/etcd" "$BIN/"
}

# The pause image as a `docker save` tarball: /pause, static, from kubernetes'
# build/pause/linux/pause.c
build_pause() {
  local out=$CACHE/pause.tar
  [ -s "$out" ] && return 0
  fetch_source
  local w=$CACHE/pause.work
  rm -rf "$w" && mkdir -p "$w/rootfs"
  gcc -Os -static -Wall -DVERSION=luagent -o "$w/rootfs/pause" "$SRC/build/pause/linux/pause.c"
  strip "$w/rootfs/pause"
  tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$w/rootfs" -cf "$w/layer.tar" pause
  local diff config cfgsum
  diff=$(sha256sum "$w/layer.tar" | cut -d' ' -f1)
  config='{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:'$diff'"]},"history":[{"created_by":"luagent tests/k8s.sh: static pause.c"}]}'
  cfgsum=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" > "$w/$cfgsum.json"
  mkdir -p "$w/$diff" && mv "$w/layer.tar" "$w/$diff/layer.tar"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' \
    "$cfgsum" "$PAUSE_IMAGE" "$diff" > "$w/manifest.json"
  tar --numeric-owner --owner=0 --group=0 -C "$w" -cf "$out.tmp" manifest.json "$cfgsum.json" "$diff"
  mv "$out.tmp" "$out"
  rm -rf "$w"
}

build() {
  mkdir -p "$CACHE"
  # shellcheck disable=SC2086
  "$repo/tools/deps.sh" $BUILD_PACKAGES $RUN_PACKAGES >&2
  fetch_debs
  build_kube
  build_pause
}

built() {
  local b
  for b in $KUBE_BINARIES etcd; do [ -x "$BIN/$b" ] || return 1; done
  [ -s "$CACHE/pause.tar" ]
}

