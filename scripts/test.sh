#!/usr/bin/env bash
# Usage: scripts/test.sh [GO TEST ARG...]     (or: make test ARGS='...')
#
# The project's test command, and CI's (.ci/run runs make test). It does its
# own set-up through scripts/with-redis.sh (Go on PATH, redis-server installed
# if missing and started on a free port, SQL DSNs exported when local servers
# answer) and scripts/mcp-npm.sh (the reference MCP servers from npm, for the
# interop tests; when that fails the tests say why and skip), then runs, in
# order (the tests that run the real agent CLIs — cmd/bot's
# TestClaudeCodeHook, internal/agentcli's Codex tests — install the pinned
# @anthropic-ai/claude-code and @openai/codex with npm into
# ~/.cache/hitlbot/npm the first time; without npm or the registry, or with
# -short, they say why and skip):
#
#   go vet PACKAGES
#   gofmt -l .                      (must list nothing; with packages given,
#                                    their directories instead of .)
#   go test -race -count=1 -timeout 30m [FLAG...] PACKAGES
#
# (-timeout: cmd/bot's end-to-end tests run the real binary's constructor
# with fake platforms and real CLIs; on a loaded 2-core machine the package
# took 9 minutes, near go test's default of 10. A -timeout given wins.)
#
# Arguments that name packages (./..., ./approval/..., github.com/...) replace
# the default ./...; all others are go test flags:
#
#   scripts/test.sh -run TestStore ./approval/...
#   make test ARGS='-run=TestStore -v'
#
# Exits with go test's status, or 1 when vet or the format check fails first.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -z ${_HITLBOT_TEST_SH_INNER:-} ]]; then
	export _HITLBOT_TEST_SH_INNER=1
	exec scripts/with-redis.sh scripts/test.sh "$@"
fi
unset _HITLBOT_TEST_SH_INNER

flags=()
vetflags=()
pkgs=()
takes_value=0
for arg in "$@"; do
	if [[ $takes_value -eq 1 ]]; then
		flags+=("$arg")
		takes_value=0
		continue
	fi
	case $arg in
	-tags=* | --tags=*)
		flags+=("$arg")
		vetflags+=("$arg")
		;;
	# go test flags written "-flag value": their value is not a package.
	-run | -skip | -bench | -benchtime | -count | -cpu | -timeout | -parallel | \
		-fuzz | -fuzztime | -fuzzminimizetime | -list | -shuffle | -p | -o | \
		-coverprofile | -coverpkg | -covermode | -cpuprofile | -memprofile | \
		-blockprofile | -mutexprofile | -trace | -outputdir | -exec | -tags)
		flags+=("$arg")
		takes_value=1
		;;
	./* | ../* | . | github.com/* | all) pkgs+=("$arg") ;;
	*) flags+=("$arg") ;;
	esac
done
if [[ ${#pkgs[@]} -eq 0 ]]; then
	pkgs=(./...)
fi

echo "== $(go version)"

# The reference MCP servers from npm, for tools/mcptool's interop tests.
if npmdir=$(scripts/mcp-npm.sh 2>/tmp/hitlbot-mcp-npm.$$); then
	export HITLBOT_TEST_MCP_NPM_DIR=$npmdir
	echo "== MCP reference servers from npm in $npmdir"
else
	export HITLBOT_TEST_MCP_NPM_SKIP="scripts/mcp-npm.sh failed: $(tail -1 /tmp/hitlbot-mcp-npm.$$)"
	echo "== $HITLBOT_TEST_MCP_NPM_SKIP (the MCP interop tests skip)"
fi
rm -f /tmp/hitlbot-mcp-npm.$$

echo "== go vet ${vetflags[*]} ${pkgs[*]}"
go vet "${vetflags[@]}" "${pkgs[@]}"

# The format check covers the directories of the packages tested (all of . by default).
fmtdirs=()
for p in "${pkgs[@]}"; do
	case $p in
	. | ./... | all | github.com/*) fmtdirs=(.) && break ;;
	*) fmtdirs+=("${p%/...}") ;;
	esac
done
echo "== gofmt -l ${fmtdirs[*]}"
unformatted=$(gofmt -l "${fmtdirs[@]}" 2>&1 || true)
if [[ -n $unformatted ]]; then
	echo "gofmt: these files are not formatted (run: make fmt):" >&2
	printf '%s\n' "$unformatted" | sed 's/^/  /' >&2
	exit 1
fi

timeout=(-timeout 30m)
for f in "${flags[@]}"; do
	[[ $f == -timeout* || $f == --timeout* ]] && timeout=()
done
echo "== go test -race -count=1 ${timeout[*]} ${flags[*]} ${pkgs[*]}"
status=0
go test -race -count=1 "${timeout[@]}" "${flags[@]}" "${pkgs[@]}" || status=$?
exit "$status"
