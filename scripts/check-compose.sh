#!/usr/bin/env bash
# Checks docker-compose.yml statically with `docker-compose config` (Debian's
# docker-compose package; no Docker engine needed). Installs the package when
# it is missing and this runs as root; otherwise says what to install.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v docker-compose >/dev/null 2>&1; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
		echo "check-compose: installing docker-compose (Debian package)" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq docker-compose >/dev/null
	else
		echo "check-compose: install Debian's docker-compose (apt-get install docker-compose)" >&2
		exit 1
	fi
fi
# The env file is the operator's; check with the example in its place.
env_file=deploy/hitlbot.env
created=""
if [[ ! -e $env_file ]]; then
	cp deploy/hitlbot.env.example "$env_file"
	created=1
fi
trap '[[ -n $created ]] && rm -f "$env_file"' EXIT
docker-compose -f docker-compose.yml config -q
# Every published port listens on this machine's loopback only: opening the
# bot to the network is the operator's choice (see docker-compose.yml), with
# server.public and real tokens, never the default. Read from the normalized
# config, so every way of writing a port is judged alike.
docker-compose -f docker-compose.yml config | python3 -c '
import sys, yaml
bad = []
for name, svc in (yaml.safe_load(sys.stdin).get("services") or {}).items():
    for p in svc.get("ports") or []:
        ip = p.get("host_ip") if isinstance(p, dict) else str(p).rsplit(":", 2)[0] if str(p).count(":") >= 2 else None
        if ip not in ("127.0.0.1", "::1", "[::1]"):
            port = "%s->%s" % (p.get("published"), p.get("target")) if isinstance(p, dict) else p
            bad.append("service %s publishes port %s on %s" % (name, port, ip or "every interface"))
for b in bad:
    print("check-compose: " + b + "; publish it on 127.0.0.1 (\"127.0.0.1:8080:8080\")", file=sys.stderr)
sys.exit(1 if bad else 0)
'
# .dockerignore keeps the local secrets, data and config out of the build
# context, and nothing the build needs (the Dockerfile copies the whole tree
# and builds ./cmd/bot, which embeds defaults.yaml and the web chat's files).
python3 - <<'PY'
import fnmatch, sys
pats = [l.strip().lstrip("/").rstrip("/") for l in open(".dockerignore") if l.strip() and not l.startswith("#")]
def ignored(path):
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.replace("**/", "")) for pat in pats for p in prefixes)
bad = ["%s must be ignored" % p for p in ["deploy/hitlbot.env", ".env", "config.yaml", "data/demo.db", ".git/HEAD", "bin/bot", "bot"] if not ignored(p)]
bad += ["%s must stay in the build context (the build or the image uses it), but is ignored" % p for p in ["go.mod", "go.sum", "cmd/bot/main.go", "cmd/bot/internal/config/defaults.yaml",
        "channels/web/static/index.html", "config.yaml.example", "deploy/config.yaml", "Dockerfile"] if ignored(p)]
for b in bad:
    print("check-compose: .dockerignore: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
# The config the compose file mounts is one the bot accepts, with the
# example's environment (its change-me tokens, which the bot refuses on
# purpose, replaced by stand-ins).
export PATH="$PATH:/usr/local/go/bin"
bin=$(mktemp -d)
trap '[[ -n $created ]] && rm -f "$env_file"; rm -rf "$bin"' EXIT
go build -o "$bin/bot" ./cmd/bot
mapfile -t example_env < <(grep -v '^#' deploy/hitlbot.env.example | grep . | sed 's/change-me-/stand-in-x-/')
env "${example_env[@]}" HITLBOT_SERVER_DATA_DIR="$bin/data" "$bin/bot" check -config deploy/config.yaml >/dev/null ||
	{ echo "check-compose: bot check refuses deploy/config.yaml with the environment of deploy/hitlbot.env.example" >&2; exit 1; }
# The compose file's build targets exist in the Dockerfile.
grep -q '^FROM .* AS with-node$' Dockerfile || { echo "check-compose: docker-compose.yml names the target with-node, which the Dockerfile lacks" >&2; exit 1; }
echo "check-compose: docker-compose.yml is valid; its ports are published on 127.0.0.1 only; .dockerignore keeps local files out; bot check accepts deploy/config.yaml"
