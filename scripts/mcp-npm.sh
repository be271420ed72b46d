#!/usr/bin/env bash
# Usage: scripts/mcp-npm.sh
#
# Installs the MCP peers nobody here wrote (tools/mcptool/testdata/npm:
# @modelcontextprotocol/server-filesystem and server-everything, and the
# TypeScript SDK whose client Claude Code uses; versions pinned by its
# package-lock.json) into a cache directory, once per lock
# file, and prints that directory on stdout. The interop tests of
# tools/mcptool run them from there (HITLBOT_TEST_MCP_NPM_DIR); no test fetches
# anything.
#
# Node.js and npm come from the machine; when they are missing and we are
# root, Debian's nodejs and npm are installed. When that is not possible or
# the registry cannot be reached, it prints why on stderr and exits 1: the
# caller exports the reason (HITLBOT_TEST_MCP_NPM_SKIP) and the interop tests
# skip with it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

src=tools/mcptool/testdata/npm
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "mcp-npm: installing Debian's nodejs and npm" >&2
		if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null 2>&1; then
			echo "mcp-npm: node and npm are missing and could not be installed" >&2
			exit 1
		fi
	else
		echo "mcp-npm: node and npm are missing (install Node.js 18 or later)" >&2
		exit 1
	fi
fi

sum=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hitlbot/mcp-npm-$sum
if [[ ! -x $cache/node_modules/.bin/mcp-server-filesystem || ! -x $cache/node_modules/.bin/mcp-server-everything ||
	! -f $cache/node_modules/@modelcontextprotocol/sdk/package.json ]]; then
	echo "mcp-npm: installing the reference MCP servers into $cache" >&2
	tmp=$(mktemp -d "${cache}.XXXXXX" 2>/dev/null || { mkdir -p "$(dirname "$cache")" && mktemp -d "${cache}.XXXXXX"; })
	cp "$src/package.json" "$src/package-lock.json" "$tmp/"
	if ! (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$tmp/npm.log"); then
		echo "mcp-npm: npm ci failed (is the npm registry reachable?):" >&2
		grep -v '^npm warn' "$tmp/npm.log" | tail -5 >&2 || true
		rm -rf "$tmp"
		exit 1
	fi
	rm -rf "$cache"
	mv "$tmp" "$cache"
fi
echo "$cache"
