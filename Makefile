# pgjobs: run `make help` for the targets.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 20s

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
COMMANDS := $(notdir $(wildcard cmd/*))

# Packaging: nfpm is pinned (v2.44 and later need modules the Go proxy does not serve).
NFPM        := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.43.0
DIST        := dist/pgjobs
PREFIX      ?= /usr
DESTDIR     ?=
ARCH        ?= $(shell $(GO) env GOARCH)
DEB_VERSION ?= 0~$(shell git log -1 --format=%cd --date=format:%Y%m%d%H%M%S 2>/dev/null || date -u +%Y%m%d%H%M%S).$(COMMIT)

.DEFAULT_GOAL := help
.PHONY: help deps build test vet staticcheck bench chaos fuzz demo clean dist install deb test-install

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## install what a fresh Debian machine lacks: a PostgreSQL server, Go modules, staticcheck, promtool (into .tools/)
	@if ./scripts/pg-bindir >/dev/null; then \
		echo "PostgreSQL server binaries: $$(./scripts/pg-bindir)"; \
	else \
		echo "no PostgreSQL server binaries: installing Debian's postgresql"; \
		SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends postgresql; \
		./scripts/pg-bindir; \
	fi
	$(GO) mod download
	$(GO) run $(STATICCHECK) -version
	@./scripts/promtool || echo "no promtool (from Debian's prometheus package): the alert rules are checked by parsing only"

build: ## build bin/pgjobs and bin/pgjobsagent, stamped with version, commit and date
	@mkdir -p bin
	for cmd in $(COMMANDS); do $(GO) build -ldflags "$(LDFLAGS)" -o bin/$$cmd ./cmd/$$cmd || exit 1; done

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

test: vet staticcheck ## go vet, staticcheck and go test -race ./... (tests start their own PostgreSQL)
	$(GO) test -race ./...

demo: build ## run the agent on a throwaway cluster with sample jobs until Ctrl-C (DEMO_ARGS=--for=90s to stop by itself)
	$(GO) run ./internal/demo -bin bin $(DEMO_ARGS)

bench: ## run the benchmarks and print their figures (schedule Next beside robfig/cron; jobs and tasks on throwaway clusters with a real server's settings, River beside the tasks; ~35 min)
	$(GO) test -run '^$$' -bench . -benchmem ./schedule | $(GO) run ./bench/ratio
	$(GO) run ./bench/agentbench
	$(GO) run ./bench/taskbench

chaos: ## run 10,000 tasks through two built agents while agents, a task's backend and the server are killed; check the outcome (~3 min)
	$(GO) run ./bench/taskchaos

fuzz: ## run every fuzz target for FUZZTIME (default 20s)
	@grep -rl --include='*_test.go' '^func Fuzz' . | while read -r file; do \
		pkg=./$$(dirname "$$file"); \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) "$$pkg" || exit 1; \
		done; \
	done

dist: ## stage dist/pgjobs: static binaries, pgjobs-install, pgjobs-remove, init script, unit, man pages, completion, monitoring files
	rm -rf $(DIST) && mkdir -p $(DIST)
	for cmd in $(COMMANDS); do CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(DIST)/$$cmd ./cmd/$$cmd || exit 1; done
	cp packaging/pgjobs-install packaging/pgjobs-remove packaging/pgjobs.default packaging/pgjobsagent.service packaging/pgjobs.bash $(DIST)/
	cp packaging/init.d/pgjobs $(DIST)/pgjobs.init
	mkdir -p $(DIST)/monitoring && cp packaging/monitoring/pgjobs-alerts.yml packaging/monitoring/pgjobs-dashboard.json packaging/monitoring/README.md $(DIST)/monitoring/
	$(DIST)/pgjobs generate config > $(DIST)/pgjobs.conf
	$(DIST)/pgjobs generate man > $(DIST)/pgjobs.8
	$(DIST)/pgjobsagent --man > $(DIST)/pgjobsagent.8
	for page in pgjobs pgjobsagent; do gzip -9n < $(DIST)/$$page.8 > $(DIST)/$$page.8.gz || exit 1; done

install: dist ## install from source with pgjobs-install: PREFIX (default /usr), DESTDIR (a staging root)
	$(DIST)/pgjobs-install --prefix $(PREFIX) $(if $(DESTDIR),--destdir $(DESTDIR))

deb: dist ## build the package dist/pgjobs_VERSION_ARCH.deb with nfpm
	rm -f dist/pgjobs_*.deb
	DEB_VERSION=$(DEB_VERSION) ARCH=$(ARCH) $(GO) run $(NFPM) package -f packaging/nfpm.yaml -p deb -t dist/

test-install: deb ## as root: install the .deb, run the agent under its init script, purge; pgjobs-install/remove in a temporary root
	PGJOBS_DEB=$(CURDIR)/$$(ls -t dist/pgjobs_*.deb | head -n 1) PGJOBS_DIST=$(CURDIR)/$(DIST) $(GO) test -tags installtest -count=1 -v -timeout 15m ./packaging/

clean: ## remove build output
	rm -rf bin dist
