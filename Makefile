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

$(STAMP): pyproject.toml
	@mkdir -p $(VENV)
	$(LOCKED) sh -c '[ $(STAMP) -nt pyproject.toml ] || { \
	  $(PYTHON) -m venv $(VENV) && \
	  $(BIN)/pip install --quiet --upgrade pip && \
	  $(BIN)/pip install --quiet -e ".[dev]" && \
	  touch $(STAMP); }'

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/mypy

test: lint
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
	-$(BIN)/python bench/locomo.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
