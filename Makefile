# privnotes build, test and demo targets. `make test` is what CI runs.
GO      ?= go
BIN     := bin/privnotes
# Debian packages the integration tests and the demo drive the kernel with.
DEB_PKGS := python3-jupyter-client python3-nbclient python3-nbformat python3-ipykernel \
            jupyter-nbconvert python3-jsonschema python3-jupyter-kernel-test
PY      := /usr/bin/python3
# The real-browser test (kernel/browsertest): classic Notebook and Debian's
# chromium, driven by puppeteer-core from npm (never its own browser).
BROWSER_DEB_PKGS := jupyter-notebook chromium
BROWSERTEST := kernel/browsertest
# The data engine (dsl/snapshot) scans snapshots through DuckDB's Arrow
# interface, which duckdb-go compiles only with this tag; without it a
# slower database/sql scan gives the same rows. Every go command of this
# Makefile gets it; `make test` also tests the fallback.
TAGS    ?= duckdb_arrow
export GOFLAGS := -tags=$(TAGS)
# The test tiers (docs/testing.md): `go test -short ./...` (make unit) is the
# fast tier; the integration tag adds the tests that drive Python/Jupyter,
# Chromium/Node or real server, kernel and worker processes
# (internal/testtier.Integration). make test, make mutants and CI set it.
TEST_GOFLAGS := -tags=$(TAGS),integration

.PHONY: all build test unit vet fmt-check deps browser-deps bench bench-quick bench-kernel install demo clean mutants audit

all: build

build:
	$(GO) build -o $(BIN) ./cmd/privnotes

# deps installs the Debian packages of the integration tests when they are
# missing (apt-get needs root; otherwise it says what to install).
deps:
	@if $(PY) -c 'import jupyter_client, nbclient, nbformat, ipykernel, nbconvert, jsonschema, jupyter_kernel_test' 2>/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "installing $(DEB_PKGS)"; \
		apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 $(DEB_PKGS) >/dev/null; \
	else \
		echo "missing Debian packages; run: sudo apt-get install $(DEB_PKGS)"; exit 1; \
	fi

# browser-deps installs what the real-browser test drives: the Debian
# packages when missing (apt-get as root, waiting for the package lock), and
# puppeteer-core from package-lock.json whenever the lock is newer.
browser-deps: $(BROWSERTEST)/node_modules/.package-lock.json
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/jupyter-notebook ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "installing $(BROWSER_DEB_PKGS)"; \
		apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 $(BROWSER_DEB_PKGS) >/dev/null; \
	else \
		echo "missing Debian packages; run: sudo apt-get install -y -o DPkg::Lock::Timeout=300 $(BROWSER_DEB_PKGS)"; exit 1; \
	fi

$(BROWSERTEST)/node_modules/.package-lock.json: $(BROWSERTEST)/package.json $(BROWSERTEST)/package-lock.json
	PUPPETEER_SKIP_DOWNLOAD=1 npm ci --prefix $(BROWSERTEST) --no-audit --no-fund

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '^stdlib/.*_symbols' || true); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	GOFLAGS=$(TEST_GOFLAGS) $(GO) vet ./...
	$(GO) vet ./internal/testtier/
	GOFLAGS= $(GO) vet ./dsl/snapshot/

# unit is the fast tier: unit and property tests; audits and long sweeps
# (testtier.Long) skip under -short, integration tests without the tag.
unit:
	$(GO) test -short -count=1 ./...

# test is everything CI runs: formatting, vet, unit, property, audit and
# integration tests (the latter drive the real kernel with jupyter_client,
# Chromium, and real server processes: the integration tag).
test: deps browser-deps fmt-check vet build
	GOFLAGS=$(TEST_GOFLAGS) $(GO) test -count=1 -timeout 30m ./...
	GOFLAGS= $(GO) test -count=1 ./dsl/snapshot/

# mutants applies each privacy-critical mutation of .ci/mutants.txt to a
# scratch copy of the repository and runs the tests that should catch it;
# it fails on a survivor, a snippet that no longer occurs exactly once, or
# a mutant that does not compile. One mutant: go run ./cmd/mutants -only ID -v
# The integration tag reaches each mutant's go test through GOFLAGS.
# MUTANTS_FLAGS=-list-baseline lists each package's selected tests instead
# of running them once unmutated: CI sets it, because make test has just
# run every test of the same tree.
MUTANTS_FLAGS ?=
mutants:
	GOFLAGS=$(TEST_GOFLAGS) $(GO) run ./cmd/mutants -list .ci/mutants.txt $(MUTANTS_FLAGS)

# audit widens the neighbouring-datasets harness (pairs of extremes, every
# function on user-level data too) and runs the statistical privacy audits.
audit:
	$(GO) test -count=1 -timeout 60m ./dsl/runtime -run 'TestNeighbouringDatasets' -audit.wide -v
	$(GO) test -count=1 -timeout 60m ./mechanisms/audit ./mechanisms/accounting -run 'Audit|Extreme|Fuzz'

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./mechanisms/...
	$(GO) run ./cmd/privnotes bench

bench-quick:
	$(GO) run ./cmd/privnotes bench --quick

# bench-kernel measures privnotes against Debian's ipykernel in one run:
# start-up to kernel_info_reply and the execute round trip of a trivial cell.
bench-kernel: deps build
	$(PY) kernel/testdata/kernelbench.py $(BIN)

PREFIX ?= $(HOME)/.local

# install puts the binary in $(PREFIX)/bin and the kernel spec in the user's
# Jupyter data dir (JUPYTER_DATA_DIR, else ~/.local/share/jupyter).
install: build
	install -d $(PREFIX)/bin
	install -m 0755 $(BIN) $(PREFIX)/bin/privnotes
	$(PREFIX)/bin/privnotes install --user

# demo builds privnotes, installs the kernel spec into build/jupyter, registers
# the demo data in build/demo-state and executes notebooks/quickstart.ipynb
# headless; the executed notebook and its HTML go to build/demo/.
demo:
	GO=$(GO) PY=$(PY) sh scripts/demo.sh

clean:
	rm -rf bin build
