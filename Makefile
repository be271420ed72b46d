# hitlbot developer targets. `make` alone lists them.
#
#   make test [ARGS='-run=X -v ./approval/...']   what CI runs (.ci/run)
#   make fuzz [FUZZTIME=30s]                       every fuzz target, one after another
#   make bench [ARGS='-benchtime=3x']
#   make measure [RUNS=3]                          bot bench's figures into docs/measured.md
#   make docs                                      the configuration reference from the config structs' comments

.DEFAULT_GOAL := help
SHELL := /bin/bash

# Go is preinstalled in /usr/local/go on CI, not always on PATH.
export PATH := $(if $(shell command -v go 2>/dev/null),$(PATH),/usr/local/go/bin:$(PATH))

GO       ?= go
ARGS     ?=
FUZZTIME ?= 30s
BIN      ?= bin/bot
RUNS     ?= 3

.PHONY: help test e2e compose helm build run fuzz bench measure docs tidy vet fmt

help: ## list the targets
	@echo 'usage: make TARGET [ARGS=...]'
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## /  \1\t/' | expand -t 10

test: ## vet, gofmt check, go test -race with a throwaway redis-server (scripts/test.sh; ARGS go to go test)
	scripts/test.sh $(ARGS)

e2e: ## the web chat page in headless Chromium, both languages and widths; screenshots in artifacts/e2e (installs chromium and fonts-noto-cjk when missing and root)
	scripts/e2e.sh $(ARGS)

compose: ## check docker-compose.yml statically (docker-compose config; installs Debian's docker-compose when missing and root)
	scripts/check-compose.sh

helm: ## check the Helm chart deploy/helm/hitlbot: lint, template, the rendered config through bot check (scripts/check-helm.sh; installs helm with go install when missing)
	scripts/check-helm.sh

build: ## build the bot into bin/bot
	$(GO) build -o $(BIN) ./cmd/bot

# run builds first, so the build is not silent: the first one compiles every
# dependency (about three minutes on 2 cores: docs/measured.md), and -v names each package
# as it compiles; later builds come from Go's cache and print nothing.
run: ## build bin/bot (showing progress), then run it (ARGS go to it, e.g. ARGS='serve -config bot.yaml')
	@echo 'building hitlbot (the first build takes about three minutes on 2 cores; each package is named as it compiles)...' >&2
	@$(GO) build -v -o $(BIN) ./cmd/bot
	@echo 'built $(BIN); starting it' >&2
	@exec $(BIN) $(ARGS)

fuzz: ## run each fuzz target (func FuzzXxx in *_test.go) for FUZZTIME (default 30s)
	@set -euo pipefail; \
	found=0; \
	while IFS=: read -r file name; do \
		found=1; dir=$$(dirname "$$file"); \
		echo "== fuzz $$name in ./$${dir#./} for $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$${name}$$" -fuzztime=$(FUZZTIME) "./$${dir#./}"; \
	done < <(grep -rHoE --include='*_test.go' --exclude-dir=.git --exclude-dir=vendor --exclude-dir=testdata \
		'^func Fuzz[A-Za-z0-9_]*' . | sed -E 's/:func /:/' | sort); \
	if [[ $$found -eq 0 ]]; then echo "no fuzz targets found"; fi

bench: ## run the benchmarks (-benchmem) with a throwaway redis-server (ARGS go to go test)
	scripts/with-redis.sh $(GO) test -run='^$$' -bench=. -benchmem $(ARGS) ./...

measure: ## run the fixed set of bot bench runs (memory and a throwaway redis-server, RUNS rounds) and write docs/measured.md
	scripts/measure.sh $(RUNS)

docs: ## write docs/configuration.md and docs/configuration.zh-CN.md from the config structs' comments and refdoc/zh.yaml (config's TestReference fails while they are stale)
	$(GO) run ./cmd/bot/internal/config/refdoc/gen

# -e: plain `go mod tidy` fails, because a test-only dependency of
# modernc.org/sqlite (a github.com/google/pprof pseudo-version) is refused by the
# module proxy. With -e tidy completes, and build, vet, test and go mod verify
# are fine afterwards.
tidy: ## go mod tidy -e (see the comment in the Makefile for why -e)
	$(GO) mod tidy -e

vet: ## go vet ./...
	$(GO) vet ./...

fmt: ## gofmt -w every Go file
	gofmt -l -w .
