# needs: k8s
# The energy recipe end to end on the test cluster (tests/k8s.sh; run by
# tests/run's kubernetes phase with KUBECONFIG and LUAGENT_TEST_K8S set):
# one run with --set sandbox.engines=k8s://..., whose outputs are byte for
# byte those of the same run on the local Docker engine; then the recipe's
# eval (2 variants x 4 inputs = 8 runs) over the Docker engine and the
# cluster at once (LUAGENT_ENGINES), every run passing and both used.
. tests/e2e/lib.sh
if [ -z "${LUAGENT_TEST_K8S:-}" ]; then
  echo "ok - $SUITE: the energy recipe on Kubernetes # SKIP no test cluster (tests/k8s.sh start; eval \"\$(tests/k8s.sh env)\")"
  exit 0
fi
DOCKER=unix:///var/run/docker.sock
export LUAGENT_RUNS_DIR="$TMP/runs" LUAGENT_EVALS_DIR="$TMP/evals"

latest_run() { ls -td "$LUAGENT_RUNS_DIR"/*energy_anomaly* | head -1; }

run_luagent run recipes/energy_anomaly.lua -q --set "sandbox.engines=$DOCKER"
on_docker=$(latest_run)
run_luagent run recipes/energy_anomaly.lua -q --set "sandbox.engines=$LUAGENT_TEST_K8S"
on_k8s=$(latest_run)
cp "$TMP/stderr" "$TMP/k8s.stderr"
# opened_on RUN PREFIX: the run's one sandbox_open event names an engine starting with PREFIX
opened_on() {
  python3 - "$1" "$2" <<'PY'
import json, sys
opens = [e for e in map(json.loads, open(sys.argv[1] + "/trace.jsonl")) if e.get("type") == "sandbox_open"]
assert len(opens) == 1 and str(opens[0].get("engine", "")).startswith(sys.argv[2]), opens
PY
}
k8s_run_ok() {
  [ "$(cat "$TMP/status")" = 0 ] || { echo "exit $(cat "$TMP/status")"; cat "$TMP/k8s.stderr"; return 1; }
  [ "$on_k8s" != "$on_docker" ] && opened_on "$on_k8s" k8s://
}
check "the recipe with --set sandbox.engines=k8s://... exits 0 and its sandbox was a pod of the cluster" k8s_run_ok
check "its anomalies.csv, report.md and energy.png are byte for byte those of the run on Docker" sh -c "
  for f in anomalies.csv report.md energy.png; do cmp '$on_docker/output/'\$f '$on_k8s/output/'\$f || exit 1; done"
check "its manifest lists the same files with the same sha256" python3 - "$on_docker" "$on_k8s" <<'PY'
import json, sys
a, b = (json.load(open(d + "/manifest.json")) for d in sys.argv[1:])
key = lambda m: sorted((f["path"], f["sha256"]) for f in m["files"])
assert key(a) == key(b) and len(key(a)) == 3, (key(a), key(b))
PY

[ -d recipes/eval_data ] || "$LUAGENT" run -q recipes/energy_eval_data.lua recipes/eval_data > /dev/null
LUAGENT_ENGINES="$DOCKER#4, $LUAGENT_TEST_K8S#4" run_luagent eval recipes/energy_anomaly.eval.yaml -q --concurrency 4
eval_dir=$(ls -d "$TMP"/evals/*-energy_anomaly-* | head -1)
check "an eval of 8 runs over the Docker engine and the cluster: every run passed, each engine had some" \
  python3 - "$eval_dir" "$(cat "$TMP/status")" <<'PY'
import glob, json, sys
d, status = sys.argv[1], sys.argv[2]
assert status == "0", "exit " + status
lines = [json.loads(l) for l in open(d + "/results.jsonl")]
assert len(lines) == 8, len(lines)
assert all(l["passed"] for l in lines), [l for l in lines if not l["passed"]]
engines = {"docker": 0, "k8s": 0}
for trace in glob.glob(d + "/**/trace.jsonl", recursive=True):
    for line in open(trace):
        e = json.loads(line)
        if e.get("type") == "sandbox_open":
            engines["k8s" if str(e.get("engine", "")).startswith("k8s://") else "docker"] += 1
assert engines["docker"] > 0 and engines["k8s"] > 0 and sum(engines.values()) == 8, engines
print(engines)
PY
check "no pod of these runs is left in the cluster" sh -c "
  ! tests/k8s.sh kubectl -n luagent-test get pods -l luagent=1 -o name | grep -q ."
