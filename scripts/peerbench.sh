#!/usr/bin/env bash
# Usage: scripts/peerbench.sh [-n N] [-c C] [-redis URL]
#
# Runs the peer hitlbot's agent bench is compared with (issue "Cost that
# does not grow with history", point 4): the OpenAI Agents SDK for
# JavaScript, one approval-paused run whose state is saved in Redis, read
# back and resumed (scripts/peerbench/bench.mjs says what it does and what
# it prints: one JSON object with `bot bench`'s field names). The SDK and
# the Redis client are installed with npm into a cache directory, once per
# lock file (versions pinned by scripts/peerbench/package-lock.json).
# scripts/measure.sh runs it for docs/measured.md's peer row.
#
# Needs Node.js 18 or later and npm (Debian's are installed when missing
# and root), the npm registry once, and a Redis (-redis, default
# redis://127.0.0.1:6379/0; its keys are removed afterwards).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

src=scripts/peerbench
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "peerbench: installing Debian's nodejs and npm" >&2
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null 2>&1 || {
			echo "peerbench: node and npm are missing and could not be installed" >&2
			exit 1
		}
	else
		echo "peerbench: node and npm are missing (install Node.js 18 or later)" >&2
		exit 1
	fi
fi

sum=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hitlbot/peerbench-npm-$sum
if [[ ! -f $cache/node_modules/@openai/agents/package.json || ! -f $cache/node_modules/redis/package.json ]]; then
	echo "peerbench: installing the OpenAI Agents SDK into $cache" >&2
	mkdir -p "$(dirname "$cache")"
	tmp=$(mktemp -d "${cache}.XXXXXX")
	cp "$src/package.json" "$src/package-lock.json" "$tmp/"
	if ! (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$tmp/npm.log"); then
		echo "peerbench: npm ci failed (is the npm registry reachable?):" >&2
		grep -v '^npm warn' "$tmp/npm.log" | tail -5 >&2 || true
		rm -rf "$tmp"
		exit 1
	fi
	rm -rf "$cache"
	mv "$tmp" "$cache"
fi
cp "$src/bench.mjs" "$cache/bench.mjs"
exec node "$cache/bench.mjs" "$@"
