#!/usr/bin/env bash
# Usage: scripts/with-redis.sh COMMAND [ARG...]
#
# Runs COMMAND with a Redis for the tests (HITLBOT_TEST_REDIS=host:port) and,
# where local PostgreSQL / MariaDB servers answer, HITLBOT_TEST_POSTGRES /
# HITLBOT_TEST_MYSQL. It does its own set-up on a fresh Debian machine:
#
#   - Go: /usr/local/go/bin is added to PATH when go is there but not on PATH;
#     no go at all is an error.
#   - Redis: a HITLBOT_TEST_REDIS already set is used as it is. Otherwise
#     redis-server is installed with apt-get when missing (root only), and a
#     throwaway redis-server is started on a free 127.0.0.1 port (no
#     snapshots, no AOF, a temporary directory). It is killed and its directory
#     removed when this script exits, also on failure or interrupt. A Redis
#     already running elsewhere (say the system's on 6379) is never touched.
#   - PostgreSQL / MariaDB are never installed: their tests skip (saying why)
#     when the variables are not set.
#
# Exits with COMMAND's status.
set -euo pipefail

say() { printf 'with-redis: %s\n' "$*" >&2; }

if [[ $# -eq 0 ]]; then
	say "usage: $0 COMMAND [ARG...]"
	exit 2
fi

# --- Go -----------------------------------------------------------------------
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
	say "go not found: install Go 1.26 (https://go.dev/doc/install) and put it on PATH"
	exit 1
fi

# --- SQL servers (optional, never installed) -------------------------------------
if [[ -z ${HITLBOT_TEST_POSTGRES:-} ]] && command -v pg_isready >/dev/null 2>&1 &&
	pg_isready -q -h 127.0.0.1 -p 5432 -t 3 </dev/null >/dev/null 2>&1; then
	export HITLBOT_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
	say "PostgreSQL answers: HITLBOT_TEST_POSTGRES=$HITLBOT_TEST_POSTGRES"
fi
if [[ -z ${HITLBOT_TEST_MYSQL:-} ]] && command -v mysqladmin >/dev/null 2>&1 &&
	mysqladmin -h127.0.0.1 -uroot --connect-timeout=3 ping </dev/null >/dev/null 2>&1; then
	export HITLBOT_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test'
	say "MariaDB/MySQL answers: HITLBOT_TEST_MYSQL=$HITLBOT_TEST_MYSQL"
fi

# --- Redis ----------------------------------------------------------------------
if [[ -n ${HITLBOT_TEST_REDIS:-} ]]; then
	say "using HITLBOT_TEST_REDIS=$HITLBOT_TEST_REDIS"
	exec "$@"
fi

if ! command -v redis-server >/dev/null 2>&1; then
	if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
		say "redis-server not found: installing Debian's redis-server"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq </dev/null
		apt-get install -y -qq redis-server </dev/null >/dev/null
		hash -r
		# The package starts a system service on 6379 where an init system
		# runs; it is left alone: the tests use their own server below.
	else
		say "redis-server not found: install Debian's redis-server (apt-get install redis-server) or set HITLBOT_TEST_REDIS"
		exit 1
	fi
fi
if ! command -v redis-server >/dev/null 2>&1; then
	say "redis-server still not found after installing it"
	exit 1
fi

redis_dir=''
redis_pid=''
cleanup() {
	if [[ -n $redis_pid ]]; then
		kill -9 "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	if [[ -n $redis_dir ]]; then
		rm -rf "$redis_dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	local fd
	if { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null; then
		exec {fd}>&-
		return 0
	fi
	return 1
}

# server_pid PORT: prints the process_id of the Redis answering on PORT
# (INFO server, spoken over bash's /dev/tcp: no redis-cli needed).
server_pid() {
	local fd line
	{ exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
	printf 'INFO server\r\n' >&"$fd"
	while IFS= read -r -t 2 line <&"$fd"; do
		line=${line%$'\r'}
		if [[ $line == process_id:* ]]; then
			printf '%s\n' "${line#process_id:}"
			break
		fi
	done
	exec {fd}>&-
}

redis_dir=$(mktemp -d "${TMPDIR:-/tmp}/hitlbot-redis.XXXXXX")
redis_port=''
for _ in $(seq 1 20); do
	# Below Linux's ephemeral range (32768-60999), away from the usual 6379.
	port=$((20000 + RANDOM % 12000))
	if port_in_use "$port"; then
		continue
	fi
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --dir "$redis_dir" --logfile "$redis_dir/redis.log" </dev/null >/dev/null 2>&1 &
	redis_pid=$!
	# Wait (bounded: 200 polls, about 10 s) until the server answers, and
	# make sure the one answering is ours, not a process that took the port.
	for _ in $(seq 1 200); do
		if ! kill -0 "$redis_pid" 2>/dev/null; then
			break
		fi
		if [[ $(server_pid "$port" 2>/dev/null || true) == "$redis_pid" ]]; then
			redis_port=$port
			break
		fi
		sleep 0.05
	done
	if [[ -n $redis_port ]]; then
		break
	fi
	say "redis-server did not come up on port $port; log:"
	cat "$redis_dir/redis.log" >&2 2>/dev/null || true
	kill -9 "$redis_pid" 2>/dev/null || true
	wait "$redis_pid" 2>/dev/null || true
	redis_pid=''
done
if [[ -z $redis_port ]]; then
	say "could not start redis-server"
	exit 1
fi

export HITLBOT_TEST_REDIS="127.0.0.1:$redis_port"
say "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on $HITLBOT_TEST_REDIS (pid $redis_pid)"

status=0
"$@" || status=$?
exit "$status"
