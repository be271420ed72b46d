#!/usr/bin/env bash
# Usage: scripts/benchcmp.sh [-k RUNS] OLD NEW [BOT BENCH ARG...]
#
# "Did this change slow it down?" in one command. It builds `bot` at two
# revisions (anything git names a commit by: a hash, a branch, HEAD~1),
# each from `git archive` into a temporary directory (the work tree is not
# touched; uncommitted changes are not measured), runs `bot bench` with the
# same arguments on each, alternately and RUNS times each (default 3; the
# order swaps every round, old new, new old, ..., so a change in the
# machine's load falls on both), and prints for every figure of bot bench's
# JSON the median and the range of the old runs and the new, and new ÷ old.
#
#   scripts/benchcmp.sh main HEAD -mode agent -n 5000
#   scripts/benchcmp.sh -k 5 eb03c5f HEAD -mode engine -redis throwaway
#
# -redis URL uses that Redis (its CPU figure is the whole server's: use one
# nothing else is using). -redis throwaway starts a redis-server of its own
# on a free port for the comparison (scripts/with-redis.sh: installed with
# apt-get when missing and root) and removes it afterwards.
#
# Needs git and Go (1.26; /usr/local/go/bin is used when go is not on PATH),
# and redis-server for -redis throwaway. Both revisions must know the bench
# arguments given (-hold, say, is newer than some). The temporary directory
# goes when it exits; the binaries are kept in BENCHCMP_CACHE (default
# ~/.cache/hitlbot-benchcmp), named by commit and Go version, so comparing
# the same commits again builds nothing.
set -euo pipefail

say() { printf 'benchcmp: %s\n' "$*" >&2; }
usage() {
	say "usage: $0 [-k RUNS] OLD NEW [BOT BENCH ARG...]"
	exit 2
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || {
	say "go not found: install Go 1.26 and put it on PATH"
	exit 1
}

runs=3
if [[ ${1:-} == -k ]]; then
	[[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage
	runs=$2
	shift 2
fi
[[ $# -ge 2 ]] || usage
old_rev=$1
new_rev=$2
shift 2
bench_args=("$@")

# -redis throwaway: run this script again inside scripts/with-redis.sh,
# which exports HITLBOT_TEST_REDIS (host:port) for the server it started.
throwaway=0
for i in "${!bench_args[@]}"; do
	if [[ ${bench_args[$i]} == -redis || ${bench_args[$i]} == --redis ]] && [[ ${bench_args[$((i + 1))]:-} == throwaway ]]; then
		throwaway=1
		if [[ -z ${_HITLBOT_BENCHCMP_INNER:-} ]]; then
			export _HITLBOT_BENCHCMP_INNER=1
			exec scripts/with-redis.sh "$0" -k "$runs" "$old_rev" "$new_rev" "${bench_args[@]}"
		fi
		url=$HITLBOT_TEST_REDIS
		[[ $url == redis://* ]] || url="redis://$url/0"
		bench_args[i + 1]=$url
	fi
done

old=$(git rev-parse --verify --quiet "$old_rev^{commit}") || {
	say "$old_rev: not a commit"
	exit 2
}
new=$(git rev-parse --verify --quiet "$new_rev^{commit}") || {
	say "$new_rev: not a commit"
	exit 2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hitlbot-benchcmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cache=${BENCHCMP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hitlbot-benchcmp}
mkdir -p "$cache"
gov=$(go env GOVERSION)
build() { # build NAME COMMIT: $tmp/bot-NAME
	local bin="$cache/bot-$2-$gov"
	if [[ ! -x $bin ]]; then
		say "building $1 ($(git log -1 --format='%h %s' "$2" | cut -c1-70))"
		mkdir "$tmp/src-$1"
		git archive "$2" | tar -x -C "$tmp/src-$1"
		(cd "$tmp/src-$1" && go build -o "$bin.$$" ./cmd/bot)
		mv "$bin.$$" "$bin" # whole or not at all
		rm -rf "$tmp/src-$1"
	fi
	ln -s "$bin" "$tmp/bot-$1"
}
build old "$old"
build new "$new"
go build -o "$tmp/benchreport" ./cmd/bot/internal/bench/benchreport

bench() { # bench NAME: one run, its JSON appended to $tmp/NAME.jsonl
	say "round $((round + 1))/$runs: $1: bot bench ${bench_args[*]}"
	"$tmp/bot-$1" bench "${bench_args[@]}" >>"$tmp/$1.jsonl"
}
for ((round = 0; round < runs; round++)); do
	if ((round % 2 == 0)); then
		bench old
		bench new
	else
		bench new
		bench old
	fi
done

printf 'old %s, new %s: bot bench %s%s\n\n' "$(git rev-parse --short "$old")" "$(git rev-parse --short "$new")" \
	"${bench_args[*]}" "$([[ $throwaway == 1 ]] && echo ' (a throwaway redis-server)' || true)"
"$tmp/benchreport" compare "$tmp/old.jsonl" "$tmp/new.jsonl"
