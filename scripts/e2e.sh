#!/usr/bin/env bash
# Usage: scripts/e2e.sh [GO TEST ARG...]
#
# The web chat page in headless Chromium (channels/web/e2e_test.go, build
# tag e2e), in English and Chinese, at 1280×860 and at phone width 390×844:
# the greeting and its example buttons; a message gets an answer; the
# confirmation dialog says what will happen first, the risk and why, what
# the tool does, who asked and until when; a HIGH dialog opens with the
# focus on 取消 and Enter never approves it (not even on 确认执行); the focus
# stays in the dialog; a click runs it once and its result is visible in
# one bubble; Escape declines; after a reload the pending confirmation
# comes back; at phone width the dialog is full width and the side panel
# folds under a header button.
#
# Installs Debian's chromium (and fonts-noto-cjk, so the Chinese
# screenshots are legible) with apt-get when missing and this runs as root
# (CI, a fresh developer machine); otherwise the test itself skips, saying
# why. Extra arguments go to go test (e.g. -v, -race, -count=3).
# HITLBOT_CHROMIUM names another browser binary. Screenshots of every
# language and width (<lang>_<desktop|phone>_<greeting|dialog|result>.png)
# are saved in HITLBOT_E2E_SCREENSHOTS, by default artifacts/e2e at the top
# of the repository (git ignores artifacts/).
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
		apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
	else
		echo "e2e: chromium is not installed and this is not root with apt-get; the test will skip" >&2
	fi
fi

export HITLBOT_E2E_SCREENSHOTS=${HITLBOT_E2E_SCREENSHOTS:-$PWD/artifacts/e2e}
mkdir -p "$HITLBOT_E2E_SCREENSHOTS"
echo "e2e: screenshots in $HITLBOT_E2E_SCREENSHOTS" >&2

exec go test -tags e2e -count=1 -run E2E "$@" ./channels/web/
