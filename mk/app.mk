# The desktop app: Tauri shell (src-tauri/), Svelte UI (ui/) and its end-to-end tests (tests/e2e/).
# `make run` builds the debug app and opens it; `make test-e2e` drives that same binary headless.

# Debian 12 names. WebKitGTK and friends to build; Xvfb, a session bus, the WebKit WebDriver, xdotool and
# python3-dbus/gi (notification recorder) to test headless.
SYSTEM_PACKAGES += libwebkit2gtk-4.1-dev curl wget file libxdo-dev libssl-dev \
  libayatana-appindicator3-dev librsvg2-dev \
  xvfb xauth x11-utils dbus dbus-x11 libglib2.0-bin python3-dbus python3-gi webkit2gtk-driver xdotool
TEST_SUITES += ui-check test-e2e

APP_BIN := target/debug/taskdeck
TAURI_DRIVER := .cache/tools/bin/tauri-driver
# Arguments for `make run`, e.g. make run ARGS="--data-dir /tmp/td --config /tmp/td/servers.json"
ARGS ?=
# The whole headless suite, teardown included; a hang fails the build instead of stalling CI.
E2E_TIMEOUT ?= 600

UI_INPUTS := $(shell find ui/src -type f 2>/dev/null) ui/index.html ui/vite.config.ts ui/tsconfig.json

.PHONY: ui-deps ui-build ui-check app-build demo-build bindings e2e-deps test-e2e package

ui-deps: ui/node_modules/.installed
ui/node_modules/.installed: ui/package.json ui/package-lock.json | deps
	cd ui && npm ci --no-audit --no-fund --loglevel=error
	touch $@

ui-build: ui/dist/.built
ui/dist/.built: ui/node_modules/.installed $(UI_INPUTS)
	cd ui && npx vite build --logLevel warn
	touch $@

ui-check: ui-deps
	cd ui && npx svelte-check --tsconfig ./tsconfig.json --fail-on-warnings
	cd ui && npx eslint --max-warnings 0 .
	cd ui && npx vitest run

# Cargo decides what is stale (the UI is embedded, and the build script tracks it), so this always asks.
# Every binary in one build with the workspace's feature set, so it reuses what `cargo test
# --workspace` compiled: building one package alone resolves features differently and rebuilds
# half the dependency tree.
WORKSPACE_BINS := cargo build --workspace --bins --locked

app-build: ui-build | deps
	$(WORKSPACE_BINS)

# The app's default config runs the demo server found beside its own binary.
demo-build: | deps
	$(WORKSPACE_BINS)

run: app-build demo-build
	$(APP_BIN) $(ARGS)

# Rewrites ui/src/lib/bindings/ from the Rust IPC types; `cargo test` fails while they differ.
bindings:
	TASKDECK_UPDATE_BINDINGS=1 cargo test -p taskdeck-app --locked --test bindings

e2e-deps: tests/e2e/node_modules/.installed $(TAURI_DRIVER)
tests/e2e/node_modules/.installed: tests/e2e/package.json tests/e2e/package-lock.json | deps
	cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(TAURI_DRIVER): | deps
	cargo install tauri-driver --version '^2' --locked --root .cache/tools

test-e2e: app-build demo-build e2e-deps
	TASKDECK_E2E_APP=$(CURDIR)/$(APP_BIN) timeout --kill-after=15 $(E2E_TIMEOUT) tests/e2e/run.sh

# A .deb with taskdeck, taskdeck-cli and taskdeck-demo-server in /usr/bin (see bundle.linux.deb.files
# in tauri.conf.json). Release builds: minutes, so not part of `make test`.
PACKAGING_CLI := packaging/node_modules/.bin/tauri
$(PACKAGING_CLI): packaging/package.json packaging/package-lock.json | deps
	cd packaging && npm ci --no-audit --no-fund --loglevel=error
	touch $@

package: ui-build $(PACKAGING_CLI)
	cargo build --release --locked -p taskdeck-cli --bin taskdeck-cli -p taskdeck-demo-server --bin taskdeck-demo-server
	cd src-tauri && ../$(PACKAGING_CLI) build --bundles deb -- --locked
	@ls -1 target/release/bundle/deb/*.deb
