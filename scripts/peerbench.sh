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
# Needs Node.js 18 or later and npm (scripts/npm-cache.sh installs
# Debian's when missing and root), the npm registry once, and a Redis (-redis, default
# redis://127.0.0.1:6379/0; its keys are removed afterwards).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cache=$(scripts/npm-cache.sh peerbench-npm scripts/peerbench \
	node_modules/@openai/agents/package.json node_modules/redis/package.json)
cp scripts/peerbench/bench.mjs "$cache/bench.mjs"
exec node "$cache/bench.mjs" "$@"
