# Taskdeck's two entry points: `make run` and `make test`. Everything they need is set up here on a
# fresh Debian/Ubuntu machine (Rust is assumed), once, and skipped when already present.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
export CARGO_TERM_COLOR ?= never

STAMP_DIR := .cache/stamps
APT_GET := DEBIAN_FRONTEND=noninteractive apt-get
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages every part needs; area makefiles append their own.
SYSTEM_PACKAGES := pkg-config build-essential python3 nodejs npm openssl
TEST_SUITES :=

.PHONY: help run test deps lint test-rust peers soak clean
help:
	@echo "make run    build and start Taskdeck"
	@echo "make test   set up everything, then run every test (what CI runs)"
	@echo "make lint   cargo fmt --check and clippy -D warnings"
	@echo "make soak   the kill -9 soak of the CLI and its server, long (SOAK_ROUNDS=300)"

include $(sort $(wildcard mk/*.mk))

# Installs only what dpkg does not already have, so a second run costs nothing.
deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if command -v node >/dev/null && command -v npm >/dev/null; then missing=$$(echo $$missing | tr ' ' '\n' | grep -vxE 'nodejs|npm' || true); fi; \
	fi; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages: $$missing"; \
	  $(SUDO) $(APT_GET) update -qq && $(SUDO) $(APT_GET) install -y -qq --no-install-recommends $$missing; \
	fi

# The reference servers the tests run against, pinned in tests/peers/package-lock.json (the Python
# one, FastMCP 4, in mk/peers-python.mk).
peers: tests/peers/node_modules/.installed
tests/peers/node_modules/.installed: tests/peers/package.json tests/peers/package-lock.json | deps
	cd tests/peers && npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings

test-rust: deps peers
	cargo test --workspace --locked

# The kill -9 soak of the CLI and its server (crates/cli/tests/soak.rs), which `make test` runs for a
# few dozen rounds, run for SOAK_ROUNDS; figures in docs/benchmarks.md. Debug builds, the ones
# `make test` already made: no release build of the workspace to wait for, and debug assertions and
# overflow checks stay on while it kills. SOAK_SEED replays a run's choices.
SOAK_ROUNDS ?= 300
SOAK_LANES ?= 2
SOAK_SEED ?=
soak: demo-build
	TASKDECK_SOAK_ROUNDS=$(SOAK_ROUNDS) TASKDECK_SOAK_LANES=$(SOAK_LANES) TASKDECK_SOAK_SEED=$(SOAK_SEED) \
	  timeout --kill-after=15 1800 cargo test --workspace --locked --test soak -- --nocapture

# Area makefiles (mk/*.mk) append their suites to TEST_SUITES, e.g. the app's end-to-end tests.
test: lint test-rust $(TEST_SUITES)

clean:
	cargo clean
	rm -rf .cache tests/peers/node_modules tests/peers/.venv tests/e2e/node_modules ui/node_modules ui/dist bench/node_modules
