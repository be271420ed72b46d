#!/usr/bin/env bash
# Checks the Helm chart (deploy/helm/hitlbot) with no cluster: helm lint
# --strict on the default values and each ci/*.yaml, helm template, the
# rendered objects read back (probes, replicas, PodDisruptionBudget, secrets
# as files), the rendered config.yaml checked by `bot check`, and the values
# the chart must refuse. Installs helm with `go install` (the Go module proxy)
# when it is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"
HELM_VERSION=v3.22.0
chart=deploy/helm/hitlbot
helm=$(command -v helm || true)
if [[ -z $helm ]]; then
	helm="$(go env GOPATH)/bin/helm"
	# go install leaves the version as its major.minor ("v3.22").
	if [[ ! -x $helm ]] || [[ $("$helm" version --template '{{.Version}}' 2>/dev/null) != "${HELM_VERSION%.*}"* ]]; then
		echo "check-helm: installing helm $HELM_VERSION (go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION)" >&2
		go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
	fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$helm" lint --strict "$chart"
for v in "$chart"/ci/*.yaml; do
	"$helm" lint --strict "$chart" -f "$v"
done

# bot check reads the *_file secrets: give it stand-ins where the Secret
# would be mounted.
go build -o "$tmp/bot" ./cmd/bot
mkdir -p "$tmp/secrets"
for k in feishu-app-secret dingtalk-client-secret redis-password; do
	printf 'stand-in-secret-%s-0123456789\n' "$k" >"$tmp/secrets/$k"
done
printf 'stand-in-web-token-0123456789 alice ops\n' >"$tmp/secrets/web-tokens"
printf 'stand-in-api-token-0123456789 ci-bot ops\n' >"$tmp/secrets/api-tokens"

for v in "" "$chart"/ci/*.yaml; do
	name=$(basename "${v:-defaults}" .yaml)
	"$helm" template hitlbot "$chart" ${v:+-f "$v"} >"$tmp/$name.yaml"
	python3 - "$tmp/$name.yaml" "$tmp/$name.config.yaml" "$tmp/secrets" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
fail = []
dep = kinds["Deployment"]
spec = dep["spec"]["template"]["spec"]
c = spec["containers"][0]
if c["readinessProbe"]["httpGet"]["path"] != "/readyz": fail.append("the readiness probe is not /readyz")
if c["livenessProbe"]["httpGet"]["path"] != "/healthz": fail.append("the liveness probe is not /healthz")
if not spec["securityContext"].get("runAsNonRoot"): fail.append("the pod may run as root")
cfg = yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])
replicas = dep["spec"]["replicas"]
if replicas > 1:
    if cfg.get("store", {}).get("backend") != "redis": fail.append("several replicas without the Redis store")
    if "PodDisruptionBudget" not in kinds: fail.append("several replicas and no PodDisruptionBudget")
mounts = {m["mountPath"] for m in c["volumeMounts"]}
def files(node, path=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from files(v, path + "." + k if path else k)
    elif isinstance(node, str) and path.endswith("_file") and node:
        yield path, node
for key, f in files(cfg):
    if not f.startswith("/run/secrets/hitlbot/"): fail.append("%s reads %s, outside the mounted Secret" % (key, f))
    elif "/run/secrets/hitlbot" not in mounts: fail.append("%s reads the Secret, which is not mounted" % key)
# For bot check: the Secret's files where this script put stand-ins.
text = kinds["ConfigMap"]["data"]["config.yaml"].replace("/run/secrets/hitlbot/", sys.argv[3] + "/")
open(sys.argv[2], "w").write(text)
for f in fail: print("check-helm: " + sys.argv[1] + ": " + f, file=sys.stderr)
sys.exit(1 if fail else 0)
PY
	# The rendered config is one the bot accepts (data_dir is the pod's).
	HITLBOT_SERVER_DATA_DIR="$tmp/data" "$tmp/bot" check -config "$tmp/$name.config.yaml" >/dev/null ||
		{ echo "check-helm: bot check refuses the config.yaml rendered with ${v:-the default values}" >&2; exit 1; }
	echo "check-helm: ${v:-default values}: lint, template, objects and bot check pass"
done

# What the chart must refuse, with the words it refuses in.
refuse() {
	local want=$1
	shift
	if out=$("$helm" template hitlbot "$chart" "$@" 2>&1); then
		echo "check-helm: helm template $* rendered; it must refuse ($want)" >&2
		exit 1
	fi
	grep -q "$want" <<<"$out" || { echo "check-helm: helm template $* failed without saying \"$want\":" >&2; echo "$out" >&2; exit 1; }
}
refuse "redis.url is empty" --set replicaCount=2
refuse "at most 50 long connections" --set replicaCount=51 --set redis.url=redis://r:6379/0 --set config.channels.feishu.enabled=true
refuse "secrets.existingSecret is empty" --set redis.url=redis://r:6379/0 --set secrets.redisPasswordKey=pw
echo "check-helm: the chart refuses several replicas without Redis, too many Feishu long connections, a password key without a Secret"
