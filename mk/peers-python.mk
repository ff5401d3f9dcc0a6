# The Python peer the tests run against: FastMCP 4 with fastmcp-tasks, the modern era's tasks
# extension as another implementation has it (tests/peers/fastmcp_tasks_server.py, used by
# crates/cli/tests/fastmcp.rs). `make peers` installs it into tests/peers/.venv (git-ignored) from
# tests/peers/requirements.txt, where every package is pinned with its hashes; nothing is
# installed outside the repository, and once installed nothing is fetched again.

# Debian's python3 has no `venv` (its ensurepip) without this.
SYSTEM_PACKAGES += python3-venv

PEERS_VENV := tests/peers/.venv

peers: $(PEERS_VENV)/.installed
# Made afresh when the requirements change, so that nothing unpinned is left in it.
$(PEERS_VENV)/.installed: tests/peers/requirements.txt | deps
	rm -rf $(PEERS_VENV)
	python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-input \
	  --require-hashes -r tests/peers/requirements.txt
	touch $@
