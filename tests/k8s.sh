#!/bin/bash
# A real single-node Kubernetes (1.20) for luagent's tests, built and run from
# Debian's packages only. bash (local, ${var//}, [ -ef ], $SECONDS).
#
#   tests/k8s.sh build       download and build everything into the cache
#                            ($K8S_CACHE, default /var/cache/luagent-k8s, outside the
#                            repository; Go's build cache too); idempotent: with
#                            everything there it takes seconds. Installs the Debian
#                            packages it needs when missing (tools/deps.sh).
#   tests/k8s.sh start       start the cluster (idempotent; builds first if needed),
#                            wait until the node is Ready and a probe pod (pause
#                            image) can be made and exec'd into (then delete it),
#                            import the pause image and, when the main Docker engine
#                            has it, luagent-sandbox:latest into the cluster's
#                            containerd, create the namespace luagent-test and the
#                            RuntimeClass runsc. State, logs ($K8S_RUN/log/*.log) and
#                            certificates under $K8S_RUN (default /tmp/luagent-k8s).
#                            Silent on success but for one final line (stdout); on
#                            failure (every wait bounded) exits 1 with the end of
#                            the failing component's log. Each start is a new
#                            cluster (empty etcd); images stay in containerd's root.
#   tests/k8s.sh stop        stop every process (pods included), remove the network
#                            namespace and every mount; the cache stays.
#   tests/k8s.sh env         print the two lines
#                              export KUBECONFIG=$K8S_RUN/admin.kubeconfig
#                              export LUAGENT_TEST_K8S='k8s://luagent-test?namespace=luagent-test'
#   tests/k8s.sh image NAME  copy image NAME from the main Docker engine into the
#                            cluster's containerd (`docker save NAME | ctr --address
#                            $K8S_RUN/containerd/containerd.sock -n k8s.io images
#                            import -`); skipped when imported with the same image id.
#                            Pods must use imagePullPolicy Never or IfNotPresent:
#                            there is no registry.
#   tests/k8s.sh kubectl ARG...  the cluster's kubectl ($K8S_CACHE/bin/kubectl) as admin
#
# Measured here (2 cores, Debian 12 VM): build from scratch 884 s (most of
# it compiling); with Go's build cache and the sources kept 31 s (linking); with
# everything built 0.7 s. start: 19-23 s (node Ready, probe pod exec'd), 102 s the
# first time in a new $K8S_RUN (~70 s of it importing luagent-sandbox:latest,
# 1.3 GB). A pod from luagent-sandbox:latest is Ready 1.6-2.4 s after creation
# (2.6-3.8 s under gVisor). stop: 3 s.
#
# How it is made (Debian bookworm):
#  - the `kubernetes` source package (1.20.5+really1.20.2), fetched with
#    `apt-get source --download-only` through a private apt configuration under
#    $K8S_CACHE/apt: the machine's own entries for this release (read at run time
#    from /etc/apt/sources.list{,.d}) as deb and deb-src, with their own lists and
#    cache; /etc/apt is untouched. Unpacked with dpkg-source, which applies
#    debian/patches. One fix: vendored github.com/modern-go/reflect2 1.0.1 crashes
#    under Go 1.18+; golang-github-modern-go-reflect2-dev's 1.0.2 replaces it.
#  - kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl:
#    `go build` (golang-1.19-go) in GOPATH mode with vendor/, as kubernetes' make
#    and Debian's build do (in module mode with GOFLAGS=-mod=vendor Go 1.19 stops at
#    "updates to go.mod needed"); no download (GOPROXY=off), CGO off. The OpenAPI
#    definitions the apiserver needs are not in the release tarball: kubernetes'
#    own `make gen_openapi` makes them first (it needs rsync). kubectl is built
#    because Debian's kubernetes-client (Go 1.19 with reflect2 1.0.1) panics in
#    reflect2's map iterator (`kubectl config set-credentials`, for one).
#  - etcd 3.4 is unpacked from etcd-server's .deb (`apt-get download`,
#    `dpkg-deb -x`): no daemon is installed or started.
#  - containerd, runc, runsc and containernetworking-plugins are installed packages.
#    This containerd has its own config, socket, root and state under $K8S_RUN and
#    never touches the system's /run/containerd (the Docker engine's). Root here
#    lacks CAP_SYS_RESOURCE, so its CRI config sets restrict_oom_score_adj = true
#    (else every pod fails with a misleading runc "EOF").
#  - the pause image: kubernetes' build/pause/linux/pause.c compiled static with gcc,
#    packed by hand as a `docker save` tarball (pause:luagent), imported with ctr.
#  - gVisor: Debian's runsc has no containerd-shim-runsc-v1, so the runtime handler
#    "runsc" is containerd's runc v2 shim with BinaryName = $K8S_RUN/runsc-ptrace, a
#    wrapper running `runsc --platform=ptrace --network=none`, as the Docker engine
#    of tests/engines.sh does (the KVM platform hangs here; with a network runsc
#    20221219 fails "cannot run with network enabled in root network namespace": it
#    takes a netns showing /proc/sys/net/core/rmem_default for the root one, and
#    this kernel shows it in every netns). So a gVisor pod has loopback only. Each
#    container gets a sandbox of its own: runsc would put a pod's containers in the
#    pause container's sandbox (by a CRI annotation, which the wrapper renames),
#    but under this shim such a container can neither be stopped nor logged.
#    RuntimeClass `runsc` selects the handler (runtimeClassName: runsc).
#
# Networking: the whole cluster (etcd, apiserver, controller-manager, scheduler,
# kubelet, containerd, so the pods too) runs in the network namespace luagent-k8s
# (`ip netns add`; a bridge in the host's namespace would drop pod traffic under
# Docker's FORWARD DROP) and in a mount namespace of its own, kept by a `sleep`
# holder process: every mount the cluster makes (pod volumes, rootfs, pods' netns)
# stays in there and goes with it, and there tmpfs hides /run/containerd (where
# shims put their sockets whatever the config says) and /run/netns, and
# $K8S_RUN/host/{log,cni,kubelet} are bound over /var/log, /var/lib/cni and
# /var/lib/kubelet, which kubelet 1.20 and the CNI library use whatever their
# flags say (the empty mount points are made on the host when missing, and
# removed by stop). Pods get $K8S_POD_CIDR (10.88.0.0/16) on the bridge cni0
# inside the namespace. The host reaches the apiserver through a veth pair:
# lk8s-host 10.89.0.1/30 in the host's namespace, lk8s-node 10.89.0.2/30 in the
# cluster's; the apiserver listens on https://10.89.0.2:6443 (its certificate
# names that address). That veth and its /30 route are the only change to the
# host's network (`ip netns add` also makes /run/netns a mount point; stop undoes
# it when no other namespace is there); no iptables rule is added in the host's
# namespace (host <-> 10.89.0.2 is INPUT/OUTPUT, not FORWARD). K8S_VETH_NET
# (default 10.89.0) moves the /30. No cluster DNS, no kube-proxy: the apiserver
# reaches the kubelet by its InternalIP.
#
# Certificates (openssl, $K8S_RUN/pki, made once): a CA; the apiserver's serving
# certificate (10.89.0.2, 127.0.0.1, 10.96.0.1, localhost, kubernetes.default...);
# client certificates for admin (O=system:masters), controller-manager, scheduler,
# kubelet (system:node:luagent-k8s) and the apiserver's kubelet client; the
# kubelet's serving certificate; a service-account key pair. The admin kubeconfig
# ($K8S_RUN/admin.kubeconfig) has the context luagent-test, namespace luagent-test.
#
# Needs: root, Debian bookworm and its apt mirror, ~4 GB in $K8S_CACHE.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
CACHE=${K8S_CACHE:-/var/cache/luagent-k8s}
RUN=${K8S_RUN:-/tmp/luagent-k8s}
NETNS=luagent-k8s
NODE=luagent-k8s
CONTEXT=luagent-test
NAMESPACE=luagent-test
VETH_NET=${K8S_VETH_NET:-10.89.0}
HOST_IP=$VETH_NET.1
NODE_IP=$VETH_NET.2
POD_CIDR=${K8S_POD_CIDR:-10.88.0.0/16}
SERVICE_CIDR=10.96.0.0/24
SERVICE_IP=10.96.0.1
PAUSE_IMAGE=pause:luagent
APISERVER=https://$NODE_IP:6443
GO=/usr/lib/go-1.19/bin/go
SRC=$CACHE/src/kubernetes
BIN=$CACHE/bin
KUBECTL=$BIN/kubectl
KUBE_BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
BUILD_PACKAGES="golang-1.19-go golang-github-modern-go-reflect2-dev dpkg-dev gcc libc6-dev make rsync openssl"
RUN_PACKAGES="containerd runc runsc containernetworking-plugins iproute2 iptables util-linux openssl"

die() { echo "k8s.sh: $*" >&2; exit 1; }

# die with the end of a component's log
die_log() {
  local what=$1 log=$2
  echo "k8s.sh: $what; the end of $log:" >&2
  tail -25 "$log" >&2 || true
  exit 1
}

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

# ---------------------------------------------------------------- certificates

PKI=$RUN/pki

# cert NAME CN O EXTENSIONS: NAME.key and NAME.crt signed by the CA
cert() {
  local name=$1 cn=$2 o=$3 ext=$4 subj
  subj=/CN=$cn; [ -n "$o" ] && subj="/O=$o$subj"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "$subj" -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n%s\n' "$ext" \
    > "$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 365 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

client_cert() { cert "$1" "$2" "${3:-}" extendedKeyUsage=clientAuth; }

b64() { base64 -w0 < "$1"; }

# kubeconfig NAME USER [CONTEXT NAMESPACE]: $RUN/NAME.kubeconfig with USER's cert
kubeconfig() {
  local user=$2 context=${3:-$2} ns=${4:-default}
  cat > "$RUN/$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: luagent-k8s
  cluster: {server: "$APISERVER", certificate-authority-data: $(b64 "$PKI/ca.crt")}
users:
- name: $user
  user: {client-certificate-data: $(b64 "$PKI/$user.crt"), client-key-data: $(b64 "$PKI/$user.key")}
contexts:
- name: $context
  context: {cluster: luagent-k8s, user: $user, namespace: $ns}
current-context: $context
YAML
  chmod 600 "$RUN/$1.kubeconfig"
}

# The CA, every certificate and kubeconfig, once per $K8S_RUN and addresses
make_pki() {
  local stamp="$NODE_IP $SERVICE_IP"
  [ "$(cat "$PKI/stamp" 2>/dev/null)" = "$stamp" ] && return 0
  rm -rf "$PKI" && mkdir -p "$PKI" && chmod 700 "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=luagent-k8s-ca -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
  cert apiserver kube-apiserver "" "extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:$NODE,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert kubelet-serving "system:node:$NODE" system:nodes "extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,DNS:$NODE"
  client_cert admin luagent-admin system:masters
  client_cert apiserver-kubelet kube-apiserver-kubelet-client system:masters
  client_cert controller-manager system:kube-controller-manager
  client_cert scheduler system:kube-scheduler
  client_cert kubelet "system:node:$NODE" system:nodes
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  kubeconfig admin admin "$CONTEXT" "$NAMESPACE"
  kubeconfig controller-manager controller-manager
  kubeconfig scheduler scheduler
  kubeconfig kubelet kubelet
  echo "$stamp" > "$PKI/stamp"
}

# ---------------------------------------------------------------- configuration

# containerd's config, the runsc wrapper and the CNI network
write_configs() {
  mkdir -p "$RUN/containerd" "$RUN/cni/net.d" "$RUN/log"
  cat > "$RUN/runsc-ptrace" <<RUNSC
#!/bin/sh
# gVisor for containerd's runc v2 shim: the ptrace platform (KVM hangs here);
# no network: this runsc takes every netns for the root one on this kernel.
# Each container gets a sandbox of its own: runsc would put a pod's containers
# into the pause container's sandbox (by the CRI annotation renamed here), but
# this shim then watches the sandbox's pid for the container's, and neither
# stopping it nor its output work.
bundle=""; create=""; prev=""
for a in "\$@"; do
  [ "\$prev" = --bundle ] && bundle=\$a
  [ "\$a" = create ] && create=1
  prev=\$a
done
spec=\$bundle/config.json
if [ -n "\$create" ] && [ -f "\$spec" ]; then
  sed -i 's/"io\.kubernetes\.cri\.container-type"/"luagent.cri.container-type"/' "\$spec"
  # its own sandbox has its own UTS namespace: the pod's name as its hostname
  pod=\$(sed -n 's/.*"io\.kubernetes\.cri\.sandbox-name":"\([a-z0-9.-]*\)".*/\1/p' "\$spec")
  if [ -n "\$pod" ] && ! grep -q '"hostname":' "\$spec"; then
    sed -i "0,/{/s//{\"hostname\":\"\$pod\",/" "\$spec"
  fi
fi
# kill of a container that has exited: runsc says "sandbox is not running", which
# the shim takes for a failure (the pod is never removed); runc's words for it
# are "container not running"
case " \$* " in
  *" kill "*)
    out=\$(/usr/bin/runsc --platform=ptrace --network=none "\$@" 2>&1) && exit 0
    rc=\$?
    printf '%s\n' "\$out" >&2
    case \$out in *"not running"*|*"cannot signal container"*) echo "container not running" >&2 ;; esac
    exit \$rc ;;
esac
exec /usr/bin/runsc --platform=ptrace --network=none "\$@"
RUNSC
  chmod 755 "$RUN/runsc-ptrace"
  local c='plugins."io.containerd.grpc.v1.cri"'
  cat > "$RUN/containerd/config.toml" <<TOML
version = 2
root = "$RUN/containerd/root"
state = "$RUN/containerd/state"
[grpc]
  address = "$RUN/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$RUN/containerd/opt"
[$c]
  sandbox_image = "$PAUSE_IMAGE"
  # root lacks CAP_SYS_RESOURCE here: without this every pod fails (runc "EOF")
  restrict_oom_score_adj = true
  [$c.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [$c.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [$c.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "$RUN/runc"
    [$c.containerd.runtimes.runsc]
      runtime_type = "io.containerd.runc.v2"
      [$c.containerd.runtimes.runsc.options]
        BinaryName = "$RUN/runsc-ptrace"
        Root = "$RUN/runsc"
  [$c.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN/cni/net.d"
TOML
  cat > "$RUN/cni/net.d/10-luagent.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "luagent-k8s", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]],
            "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$RUN/cni/ipam"}}]}
CNI
  cat > "$RUN/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
cgroupDriver: cgroupfs
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
resolvConf: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
YAML
}

# ---------------------------------------------------------------- namespaces

holder_pid() {
  local pid
  pid=$(cat "$RUN/pid/holder" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "/proc/$pid/ns/net" -ef "/run/netns/$NETNS" ] && echo "$pid"
}

# The network namespace and the veth pair host <-> cluster
net_up() {
  [ -e "/run/netns/$NETNS" ] || ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  if ! ip link show lk8s-host >/dev/null 2>&1; then
    ip link add lk8s-host type veth peer name lk8s-node netns "$NETNS"
    ip addr add "$HOST_IP/30" dev lk8s-host
    ip -n "$NETNS" addr add "$NODE_IP/30" dev lk8s-node
  fi
  ip link set lk8s-host up
  ip -n "$NETNS" link set lk8s-node up
}

# Host folders the cluster's programs write to whatever their flags say
# (kubelet 1.20: /var/log/pods, /var/log/containers, /var/lib/kubelet/device-plugins;
# containerd's CNI library: /var/lib/cni): in the cluster's mount namespace each
# is $RUN/host/NAME bound over it
PRIVATE_DIRS="/var/log /var/lib/cni /var/lib/kubelet"

# A process that keeps the cluster's mount namespace (inside the network
# namespace): tmpfs over /run/containerd (the shims' sockets) and /run/netns (the
# pods' netns), and PRIVATE_DIRS; every mount the cluster makes stays in there.
holder_up() {
  holder_pid >/dev/null && return 0
  local d binds=""
  mkdir -p "$RUN/pid" "$RUN/made"
  for d in $PRIVATE_DIRS /run/containerd; do
    # a mount point must exist: made here (and removed by stop) when missing
    [ -d "$d" ] || { mkdir -p "$d"; touch "$RUN/made/$(echo "$d" | tr / _)"; }
  done
  for d in $PRIVATE_DIRS; do
    mkdir -p "$RUN/host/$(basename "$d")"
    binds="$binds mount --bind '$RUN/host/$(basename "$d")' '$d' &&"
  done
  rm -f "$RUN/holder.ready"
  nohup nsenter --net="/run/netns/$NETNS" unshare --mount --propagation slave -- /bin/sh -c "
    mount -t tmpfs -o mode=0711 luagent-k8s /run/containerd &&
    mount -t tmpfs -o mode=0755 luagent-k8s /run/netns && $binds
    touch '$RUN/holder.ready' && exec sleep infinity" > "$RUN/log/holder.log" 2>&1 &
  echo $! > "$RUN/pid/holder"
  local _
  for _ in $(seq 100); do [ -f "$RUN/holder.ready" ] && return 0; sleep 0.05; done
  die_log "the namespace holder did not start" "$RUN/log/holder.log"
}

# ---------------------------------------------------------------- processes

# alive PID: PID runs (a zombie does not: PID 1 here reaps slowly)
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# running NAME: NAME's pid when it runs
running() {
  local pid
  pid=$(cat "$RUN/pid/$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && alive "$pid" && echo "$pid"
}

# launch NAME COMMAND...: run COMMAND in the cluster's namespaces, logging to
# $RUN/log/NAME.log
launch() {
  local name=$1; shift
  running "$name" >/dev/null && return 0
  nohup nsenter --target "$(holder_pid)" --mount --net -- "$@" >> "$RUN/log/$name.log" 2>&1 &
  echo $! > "$RUN/pid/$name"
}

start_etcd() {
  launch etcd "$BIN/etcd" --name "$NODE" --data-dir "$RUN/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster "$NODE=http://127.0.0.1:2380" --log-level warn
}

start_containerd() {
  launch containerd /usr/bin/containerd --config "$RUN/containerd/config.toml" --log-level warn
}

start_apiserver() {
  launch kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=0.0.0.0 --secure-port=6443 --advertise-address="$NODE_IP" --insecure-port=0 \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" --authorization-mode=Node,RBAC --allow-privileged=true \
    --kubelet-client-certificate="$PKI/apiserver-kubelet.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet.key" --kubelet-certificate-authority="$PKI/ca.crt" \
    --kubelet-preferred-address-types=InternalIP --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --profiling=false --v=0
}

start_controller_manager() {
  local k=$RUN/controller-manager.kubeconfig
  launch kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$k" \
    --authentication-kubeconfig="$k" --authorization-kubeconfig="$k" --leader-elect=false \
    --bind-address=127.0.0.1 --port=0 --use-service-account-credentials=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --controllers='*,-nodeipam,-cloud-node-lifecycle' --profiling=false --v=0
}

start_scheduler() {
  local k=$RUN/scheduler.kubeconfig
  launch kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$k" --authentication-kubeconfig="$k" \
    --authorization-kubeconfig="$k" --leader-elect=false --bind-address=127.0.0.1 --port=0 \
    --profiling=false --v=0
}

start_kubelet() {
  launch kubelet "$BIN/kubelet" --config="$RUN/kubelet.yaml" --kubeconfig="$RUN/kubelet.kubeconfig" \
    --container-runtime=remote \
    --container-runtime-endpoint="unix://$RUN/containerd/containerd.sock" \
    --root-dir="$RUN/kubelet" --node-ip="$NODE_IP" --hostname-override="$NODE" --v=0
}

COMPONENTS="etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet"

# a component that was started and died, if one did
dead_component() {
  local c
  for c in $COMPONENTS; do
    [ -f "$RUN/pid/$c" ] && ! running "$c" >/dev/null && { echo "$c"; return 0; }
  done
  return 1
}

# wait_for SECONDS WHAT LOG COMMAND...: until COMMAND succeeds; else die with the
# end of the log of a component that died, or of LOG
wait_for() {
  local secs=$1 what=$2 log=$3; shift 3
  local end=$((SECONDS + secs)) dead
  until "$@" >/dev/null 2>&1; do
    if dead=$(dead_component); then die_log "$dead exited while waiting for $what" "$RUN/log/$dead.log"; fi
    [ $SECONDS -ge $end ] && die_log "$what: not within $secs s" "$log"
    sleep 0.25
  done
}

kc() { KUBECONFIG=$RUN/admin.kubeconfig "$KUBECTL" "$@"; }

ctr_() { ctr --address "$RUN/containerd/containerd.sock" -n k8s.io "$@"; }

# ctr_ within 5 s
ctr_t() { timeout 5 ctr --address "$RUN/containerd/containerd.sock" -n k8s.io "$@"; }

node_ready() {
  [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# ---------------------------------------------------------------- images

# NAME with its tag (docker's default :latest)
with_tag() { case ${1##*/} in *:*|*@*) echo "$1" ;; *) echo "$1:latest" ;; esac; }

# has_image NAME: containerd holds NAME (under its normalized name)
has_image() {
  local n; n=$(with_tag "$1")
  ctr_ images ls -q | grep -qE "(^|/)$(printf '%s' "$n" | sed 's/[.[\*^$]/\\&/g')\$"
}

import_pause() {
  has_image "$PAUSE_IMAGE" && return 0
  ctr_ images import "$CACHE/pause.tar" >/dev/null
}

# image NAME: import NAME from the main Docker engine; skipped when imported with
# the same id (recorded beside containerd's root)
image() {
  local name=$1 id mark
  id=$(docker image inspect -f '{{.Id}}' "$name") || die "image $name: not in the main Docker engine"
  mark=$RUN/containerd/imported/$(printf '%s' "$(with_tag "$name")" | tr '/:@' '___')
  if [ "$(cat "$mark" 2>/dev/null)" = "$id" ] && has_image "$name"; then return 0; fi
  mkdir -p "$(dirname "$mark")"
  docker save "$name" | ctr_ images import - >/dev/null || die "image $name: import failed"
  echo "$id" > "$mark"
}

# ---------------------------------------------------------------- start

# The probe: a pod from the pause image, exec'd into (`/pause -v`), deleted
probe_pod() {
  kc -n default delete pod k8s-sh-probe --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
  kc -n default apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: k8s-sh-probe}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
  containers: [{name: pause, image: $PAUSE_IMAGE, imagePullPolicy: Never}]
YAML
  wait_for 60 "the probe pod Ready" "$RUN/log/kubelet.log" \
    kc -n default wait --for=condition=Ready pod/k8s-sh-probe --timeout=1s
  kc -n default exec k8s-sh-probe -- /pause -v >/dev/null 2>&1 ||
    die_log "kubectl exec into the probe pod failed" "$RUN/log/kubelet.log"
  kc -n default delete pod k8s-sh-probe --grace-period=0 --force >/dev/null 2>&1
}

# The namespace for the tests, with its default service account; RuntimeClass runsc
cluster_objects() {
  kc apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NAMESPACE}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: runsc}
handler: runsc
YAML
  wait_for 30 "the service account $NAMESPACE/default" "$RUN/log/kube-controller-manager.log" \
    kc -n "$NAMESPACE" get serviceaccount default
  wait_for 30 "the service account default/default" "$RUN/log/kube-controller-manager.log" \
    kc -n default get serviceaccount default
}

all_running() {
  local c; for c in holder $COMPONENTS; do running "$c" >/dev/null || return 1; done
}

start() {
  local t0=$SECONDS
  if all_running && node_ready; then
    echo "k8s.sh: already up: node $NODE Ready, apiserver $APISERVER; eval \"\$($0 env)\""
    return 0
  fi
  stop
  built || build
  mkdir -p "$RUN/log" "$RUN/pid"
  make_pki
  write_configs
  net_up
  holder_up
  start_etcd
  start_containerd
  start_apiserver
  wait_for 30 "containerd's socket" "$RUN/log/containerd.log" ctr_ version
  containerd_clean
  import_pause
  start_kubelet
  wait_for 60 "the apiserver ready" "$RUN/log/kube-apiserver.log" kc get --raw /readyz
  # these two stop when RBAC's bootstrap roles are not there yet
  start_controller_manager
  start_scheduler
  wait_for 90 "node $NODE Ready" "$RUN/log/kubelet.log" node_ready
  cluster_objects
  probe_pod
  if docker image inspect luagent-sandbox:latest >/dev/null 2>&1; then image luagent-sandbox:latest; fi
  echo "k8s.sh: up in $((SECONDS - t0)) s: node $NODE Ready, apiserver $APISERVER; eval \"\$($0 env)\""
}

# ---------------------------------------------------------------- stop

# stop_pid NAME: SIGTERM, then SIGKILL after 10 s
stop_pid() {
  local pid _
  pid=$(running "$1") || { rm -f "$RUN/pid/$1"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$RUN/pid/$1"
}

# Every pod's containers: kill and delete them through containerd, a pod's
# containers before its sandbox (gVisor refuses to kill a container of a
# sandbox that is gone). Each call bounded: a wedged shim does not answer.
remove_containers() {
  running containerd >/dev/null || return 0
  local kind id
  for kind in container sandbox; do
    for id in $(ctr_t containers ls -q "labels.\"io.cri-containerd.kind\"==$kind" 2>/dev/null); do
      ctr_t tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
      ctr_t tasks delete -f "$id" >/dev/null 2>&1 || true
      ctr_t containers delete "$id" >/dev/null 2>&1 || true
    done
  done
  for id in $(ctr_t containers ls -q 2>/dev/null); do
    ctr_t tasks delete -f "$id" >/dev/null 2>&1 || true
    ctr_t containers delete "$id" >/dev/null 2>&1 || true
  done
}

# containerd without an earlier cluster's containers (kubelet 1.20 stops at a
# container without its sandbox): removed, then containerd restarted, since its
# CRI plugin keeps what it loaded at start
containerd_clean() {
  [ -z "$(ctr_t containers ls -q 2>/dev/null)" ] && return 0
  remove_containers
  stop_pid containerd
  start_containerd
  wait_for 30 "containerd's socket" "$RUN/log/containerd.log" ctr_ version
}

# Leftovers: processes in the cluster's mount or network namespace (shims,
# gVisor sandboxes) and in the kubelet's cgroups (pods' processes)
kill_leftovers() {
  local holder pid pids
  holder=$(holder_pid) || holder=""
  pids=$(grep -l ':/kubepods' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 || true)
  for pid in /proc/[0-9]*; do
    pid=${pid#/proc/}
    if { [ -n "$holder" ] && [ "$pid" != "$holder" ] && [ "/proc/$pid/ns/mnt" -ef "/proc/$holder/ns/mnt" ]; } ||
       { [ -e "/run/netns/$NETNS" ] && [ "/proc/$pid/ns/net" -ef "/run/netns/$NETNS" ]; }; then
      pids="$pids $pid"
    fi
  done
  # shellcheck disable=SC2086
  [ -z "${pids// /}" ] || kill -KILL $pids 2>/dev/null || true
}

# The kubelet's cgroups (cgroupfs driver: kubepods under each hierarchy)
remove_cgroups() {
  local d
  for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    if [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
}

net_down() {
  if [ -e "/run/netns/$NETNS" ]; then ip netns del "$NETNS"; fi
  ip link del lk8s-host 2>/dev/null || true
  # ip netns add made /run/netns a mount point (and the folder, if missing):
  # undone once no namespace is left there (ip makes both again when needed)
  if [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
    if mountpoint -q /run/netns; then umount /run/netns 2>/dev/null || true; fi
    rmdir /run/netns 2>/dev/null || true
  fi
  local m
  for m in "$RUN"/made/_*; do
    [ -f "$m" ] || continue
    rmdir "$(basename "$m" | tr _ /)" 2>/dev/null || true
    rm -f "$m"
  done
}

stop() {
  [ -d "$RUN" ] || return 0
  # no graceful removal of pods (seconds each under gVisor): their processes are
  # killed below and the next start removes their records (containerd_clean)
  stop_pid kubelet
  local c
  for c in kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do stop_pid "$c"; done
  kill_leftovers
  stop_pid holder
  sleep 0.2
  kill_leftovers
  remove_cgroups
  net_down
  # the next start is a new cluster; images stay in containerd's root
  rm -rf "$RUN/etcd" "$RUN/kubelet" "$RUN/cni/ipam" "$RUN/host" \
    "$RUN/containerd/state" "$RUN/runc" "$RUN/runsc" "$RUN/holder.ready"
}

env_lines() {
  echo "export KUBECONFIG=$RUN/admin.kubeconfig"
  echo "export LUAGENT_TEST_K8S='k8s://$CONTEXT?namespace=$NAMESPACE'"
}

case ${1:-} in
  build) build ;;
  start) start ;;
  stop) stop ;;
  env) env_lines ;;
  image) [ -n "${2:-}" ] || die "usage: $0 image NAME"; image "$2" ;;
  kubectl) shift; kc "$@" ;;
  *) sed -n '2,34p' "$0" >&2; exit 2 ;;
esac
