#!/bin/bash
# A real single-node Kubernetes (1.20) for luagent's tests, built and run from
# Debian's packages only. bash (local, ${var//}, [ -ef ], $SECONDS).
#
#   tests/k8s.sh build       download and build everything into the cache
#                            ($K8S_CACHE, default /var/cache/luagent-k8s, outside the
#                            repository; Go's build cache too); idempotent: with
#                            everything there it takes seconds. Installs the Debian
#                            packages it needs when missing (tools/deps.sh).
#   tests/k8s.sh built       exit 0 when everything is built already (nothing is done)
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
# The bridge does not enforce NetworkPolicy; k8s.sh drops every pod's traffic
# at cni0 (iptables INPUT and FORWARD in the cluster's namespace), as a
# policy-enforcing plugin would for luagent's deny-all policy (pod_firewall).
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

# the build (tests/k8s/build.sh) and the certificates and configuration files (tests/k8s/config.sh)
. "$here/k8s/build.sh"
. "$here/k8s/config.sh"

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
  pod_firewall
}

# The bridge plugin does not enforce NetworkPolicy. Every pod of this cluster
# is a luagent sandbox under luagent's deny-all policy (luagent.network=none),
# so what a policy-enforcing plugin (Calico, Cilium, ...) would do for them is
# done here: nothing a pod sends leaves the bridge — not to the node (the
# apiserver, the kubelet), not through it to the host. Inside the cluster's
# namespace only; a network = true session has no network on this cluster.
pod_firewall() {
  local chain
  for chain in INPUT FORWARD; do
    ip netns exec "$NETNS" iptables -C "$chain" -i cni0 -j DROP 2>/dev/null ||
      ip netns exec "$NETNS" iptables -I "$chain" -i cni0 -j DROP
  done
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
  built) built ;;
  start) start ;;
  stop) stop ;;
  env) env_lines ;;
  image) [ -n "${2:-}" ] || die "usage: $0 image NAME"; image "$2" ;;
  kubectl) shift; kc "$@" ;;
  *) sed -n '2,34p' "$0" >&2; exit 2 ;;
esac
