#!/usr/bin/env bash
# Usage: scripts/npm-cache.sh NAME DIR FILE...
#
# Installs the npm packages that DIR's package.json and package-lock.json
# pin (npm ci) into a cache directory, once per lock file, and prints that
# directory on stdout: $XDG_CACHE_HOME/hitlbot/NAME-<hash of the two
# files> (or ~/.cache/…). It installs again only when one of FILE... (paths
# inside the cache, the installed packages' marks) is missing. What uses
# it: scripts/mcp-npm.sh (the MCP peers for the interop tests) and
# scripts/peerbench.sh (the OpenAI Agents SDK for make measure).
#
# Node.js and npm come from the machine; when they are missing and we are
# root, Debian's nodejs and npm are installed. When that is not possible or
# the registry cannot be reached, it says why on stderr (its last line
# names NAME) and exits 1.
set -euo pipefail

[[ $# -ge 3 ]] || {
	echo "usage: $0 NAME DIR FILE..." >&2
	exit 2
}
name=$1 src=$2
shift 2

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		echo "$name: installing Debian's nodejs and npm" >&2
		if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) >/dev/null 2>&1; then
			echo "$name: node and npm are missing and could not be installed" >&2
			exit 1
		fi
	else
		echo "$name: node and npm are missing (install Node.js 18 or later)" >&2
		exit 1
	fi
fi

sum=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hitlbot/$name-$sum
installed=1
for f in "$@"; do
	[[ -e $cache/$f ]] || installed=0
done
if [[ $installed -eq 0 ]]; then
	echo "$name: installing $src's npm packages into $cache" >&2
	mkdir -p "$(dirname "$cache")"
	tmp=$(mktemp -d "${cache}.XXXXXX")
	cp "$src/package.json" "$src/package-lock.json" "$tmp/"
	if ! (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>"$tmp/npm.log"); then
		grep -v '^npm warn' "$tmp/npm.log" | tail -5 >&2 || true
		echo "$name: npm ci failed (is the npm registry reachable?)" >&2
		rm -rf "$tmp"
		exit 1
	fi
	rm -rf "$cache"
	mv "$tmp" "$cache"
fi
echo "$cache"
