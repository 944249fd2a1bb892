# herald: `make run` starts everything on the embedded default; `make test` checks it all.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit integration clean bench chaos chaos-short

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "herald needs Python 3.11 or newer: set PYTHON=python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/herald run

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest -m "not chaos"

# tests/unit: pure logic, an injected clock, no services: seconds.
unit: $(STAMP)
	$(BIN)/pytest tests/unit

# tests/integration: real SQL, Redis and HTTP (embedded SQLite and Redis unless
# HERALD_DATABASE_URL / HERALD_REDIS_URL point elsewhere).
integration: $(STAMP)
	$(BIN)/pytest -m "not chaos" tests/integration

# Chaos runs (tests/chaos): real processes, injected faults, copies counted on the sandbox.
# SEED=n replays a run. `chaos` writes docs/reliability.md; `chaos-short` is CI's.
CHAOS = $(BIN)/pytest -m chaos tests/chaos $(if $(SEED),--seed $(SEED))

chaos: $(STAMP)
	$(CHAOS) --chaos-scale full --chaos-report docs/reliability.md --chaos-dir .herald/chaos

chaos-short: $(STAMP)
	$(CHAOS) --chaos-scale short

# Benchmarks that print ratios; writes docs/performance.md. Needs PostgreSQL on
# 127.0.0.1:5432 and Redis on 127.0.0.1:6379 for the PostgreSQL figures.
bench: $(STAMP)
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .herald herald.db herald.db-wal herald.db-shm
