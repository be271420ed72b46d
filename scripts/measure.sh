#!/usr/bin/env bash
# Usage: scripts/measure.sh [RUNS]     (or: make measure [RUNS=3])
#
# Measures what one approval costs and writes docs/measured.md: builds `bot`
# from the work tree, runs the fixed set of `bot bench` commands below on
# the memory store and on a throwaway redis-server (scripts/with-redis.sh,
# which starts one on a free port and removes it afterwards), RUNS rounds
# (default 3; each round runs every command once, so a change in the
# machine's load falls on all rows), and turns their JSON into the page's
# table (cmd/bot/internal/bench/benchreport measured): the median and range
# of each figure per command, with the machine, the date, the commit and
# the load average before and after; and what a newcomer's first build
# costs: `go mod download` into an empty module cache, then `go build` with
# an empty build cache (elapsed and CPU seconds), the package count and the
# binary's size. Figures in the README would go stale;
# this page is regenerated instead.
#
# Needs git, Go (1.26) and redis-server (installed with apt-get when missing
# and root). A HITLBOT_TEST_REDIS already set is used instead of a
# throwaway server; its CPU figure is the whole server's, so it should be a
# Redis nothing else is using.
set -euo pipefail

say() { printf 'measure: %s\n' "$*" >&2; }

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -z ${_HITLBOT_MEASURE_INNER:-} ]]; then
	export _HITLBOT_MEASURE_INNER=1
	if [[ -z ${HITLBOT_TEST_REDIS:-} ]]; then
		export _HITLBOT_MEASURE_THROWAWAY=1
	fi
	exec scripts/with-redis.sh scripts/measure.sh "$@"
fi

runs=${1:-3}
[[ $runs =~ ^[1-9][0-9]*$ ]] || {
	say "usage: $0 [RUNS]"
	exit 2
}

# The rows of docs/measured.md, in order; $REDIS is the Redis's URL.
commands=(
	"-mode engine -n 10000 -pending 10000"
	"-mode agent -n 2000"
	"-mode agent -n 32000"
	"-mode agent -n 2000 -hold 20000"
	"-mode resume -n 2000"
	"-mode engine -n 10000 -pending 10000 -redis \$REDIS"
	"-mode agent -n 2000 -redis \$REDIS"
	"-mode agent -n 32000 -redis \$REDIS"
	"-mode agent -n 2000 -hold 20000 -redis \$REDIS"
	"-mode resume -n 2000 -redis \$REDIS"
	"peer -n 2000 -redis \$REDIS"
)

url=$HITLBOT_TEST_REDIS
[[ $url == redis://* ]] || url="redis://$url/0"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hitlbot-measure.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# "peer" is not bot bench: it is the OpenAI Agents SDK doing what
# `-mode agent -redis` does (scripts/peerbench.sh), measured in the same
# rounds so that the ratio between the two holds for one load. Without
# Node.js or the npm registry its row is left out, and the page says why.
peer_skip=""
if ! scripts/peerbench.sh -n 1 -c 1 -redis "$url" >/dev/null 2>"$tmp/peer.err"; then
	peer_skip=$(tail -1 "$tmp/peer.err")
	say "the peer's row is left out: $peer_skip"
fi

# The cold build first, before the benchmarks warm anything: the module
# download into an empty module cache (from GOPROXY, as on a fresh
# machine), then the build with an empty build cache from the modules
# already there, timed apart, so a slow network does not hide in the
# compile figure.
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime | sed 's/.*load averages*: *//'; }
say "cold build: go mod download into an empty module cache"
TIMEFORMAT='%R %U %S'
dl=$( { time GOMODCACHE="$tmp/modcache" GOFLAGS=-modcacherw go mod download >/dev/null 2>"$tmp/err"; } 2>&1) || {
	cat "$tmp/err" >&2
	exit 1
}
chmod -R u+w "$tmp/modcache" 2>/dev/null || true
rm -rf "$tmp/modcache"
say "cold build: go build with an empty build cache"
build_load=$(load)
bt=$( { time GOCACHE="$tmp/gocache" go build -o "$tmp/bot" ./cmd/bot 2>"$tmp/err"; } 2>&1) || {
	cat "$tmp/err" >&2
	exit 1
}
rm -rf "$tmp/gocache"
read -r build_wall build_user build_sys <<<"$bt"
build_cpu=$(awk -v u="$build_user" -v s="$build_sys" 'BEGIN { printf "%.1f", u + s }')
read -r download_wall _ <<<"$dl"
packages=$(go list -deps ./cmd/bot | wc -l)
bytes=$(stat -c %s "$tmp/bot")
go build -o "$tmp/benchreport" ./cmd/bot/internal/bench/benchreport

commit=$(git rev-parse --short=12 HEAD)
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
	commit="$commit with uncommitted changes"
fi
load_before=$(load)

for ((round = 0; round < runs; round++)); do
	for cmd in "${commands[@]}"; do
		read -r -a args <<<"${cmd//\$REDIS/$url}"
		if [[ ${args[0]} == peer ]]; then
			[[ -z $peer_skip ]] || continue
			say "round $((round + 1))/$runs: scripts/peerbench.sh ${cmd#peer }"
			out=$(scripts/peerbench.sh "${args[@]:1}")
			printf 'scripts/peerbench.sh %s\t%s\n' "${cmd#peer }" "$out" >>"$tmp/rows"
			continue
		fi
		say "round $((round + 1))/$runs: bot bench $cmd"
		out=$("$tmp/bot" bench "${args[@]}")
		printf 'bot bench %s\t%s\n' "$cmd" "$out" >>"$tmp/rows"
	done
done

if [[ -n ${_HITLBOT_MEASURE_THROWAWAY:-} ]]; then
	redis="\$REDIS: a throwaway redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on the same machine, nothing else using it"
else
	redis="\$REDIS: HITLBOT_TEST_REDIS, as given"
fi
"$tmp/benchreport" measured -commit "$commit" -peer-missing "$peer_skip" -load-before "$load_before" -load-after "$(load)" -redis "$redis" \
	-build-wall "$build_wall" -build-cpu "$build_cpu" -build-download "$download_wall" -build-packages "$packages" \
	-build-bytes "$bytes" -build-load "$build_load" "$tmp/rows" >"$tmp/measured.md"
mv "$tmp/measured.md" docs/measured.md
say "wrote docs/measured.md"
