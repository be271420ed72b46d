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
echo "check-compose: docker-compose.yml is valid"
