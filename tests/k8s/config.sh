# tests/k8s/config.sh: the test cluster's certificates and configuration files
# (sourced by tests/k8s.sh, whose settings it uses). See tests/k8s.sh.
# shellcheck shell=bash

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
# a memory emptyDir as large as its sizeLimit (a writer gets ENOSPC, as in a
# Docker tmpfs volume), not as the node's memory (alpha in 1.20, on by default
# from 1.22); and a cap on every pod's processes (no per-pod pids in the Pod API)
featureGates: {SizeMemoryBackedVolumes: true}
podPidsLimit: 4096
YAML
}

