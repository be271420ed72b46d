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
# scripts/npm-cache.sh does the work: Node.js and npm come from the machine
# (Debian's installed when missing and root); when that is not possible or
# the registry cannot be reached, it prints why on stderr and exits 1: the
# caller exports the reason (HITLBOT_TEST_MCP_NPM_SKIP) and the interop tests
# skip with it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

exec scripts/npm-cache.sh mcp-npm tools/mcptool/testdata/npm \
	node_modules/.bin/mcp-server-filesystem node_modules/.bin/mcp-server-everything \
	node_modules/@modelcontextprotocol/sdk/package.json
