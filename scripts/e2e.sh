#!/usr/bin/env bash
# Usage: scripts/e2e.sh [GO TEST ARG...]
#
# The web chat page in headless Chromium (channels/web/e2e_test.go, build
# tag e2e): send a message, the confirmation dialog appears, click 确认执行,
# the result shows; Escape declines; after a reload the pending confirmation
# comes back and Enter confirms.
#
# Installs Debian's chromium with apt-get when it is missing and this runs
# as root (CI, a fresh developer machine); otherwise the test itself skips,
# saying why. Extra arguments go to go test (e.g. -v, -race, -count=3).
# HITLBOT_CHROMIUM names another browser binary;
# HITLBOT_E2E_SCREENSHOTS=DIR saves screenshots of the page there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Go is preinstalled in /usr/local/go on CI, not always on PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	export PATH=/usr/local/go/bin:$PATH
fi

have_chromium() {
	[[ -n ${HITLBOT_CHROMIUM:-} ]] && return 0
	local b
	for b in /usr/bin/chromium chromium chromium-browser google-chrome google-chrome-stable; do
		command -v "$b" >/dev/null 2>&1 && return 0
	done
	return 1
}

if ! have_chromium; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
		echo "e2e: installing chromium (Debian package)" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq chromium >/dev/null
	else
		echo "e2e: chromium is not installed and this is not root with apt-get; the test will skip" >&2
	fi
fi

exec go test -tags e2e -count=1 -run E2E "$@" ./channels/web/
