# Development tasks for smoor-env (GNU make). Everything runs inside ./.venv,
# which is created and (re)installed from pyproject.toml on demand.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

# Interpreter used to create the venv: python3.11 if present, else python3.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Extra arguments, e.g. `make test PYTEST_ARGS="-x -k cards"`,
# `make benchmark ARGS="--help"`.
PYTEST_ARGS ?=
ARGS ?=

# The ray extra pins RLlib's gymnasium (1.2.2), so .venv runs on that version. The
# environments must work with the newest Gymnasium too: a second, light venv (the core
# package and the test extra, no torch, no Ray) pinned to the newest release runs the
# environment tests (test-gym-latest, part of `make test`). Bump GYM_LATEST when Gymnasium
# releases (`pip index versions gymnasium`); the stamp names the version, so a bump
# reinstalls.
GYM_LATEST := 1.4.0
GYM_VENV   := .venv-gym-latest
GYM_STAMP  := $(GYM_VENV)/.installed-gymnasium-$(GYM_LATEST)
# The tests that go through Gymnasium or PettingZoo and need neither torch nor Ray:
# PettingZoo's api_test, Gymnasium's check_env and the vector env's autoreset, the vector
# env in worker processes (Gymnasium's shared memory), the environments' errors and
# fuzzing, and rendering through Gymnasium's wrappers (RenderCollection, RecordVideo).
GYM_TESTS  := tests/test_aec_env.py tests/test_gym_env.py tests/test_workers.py \
              tests/test_env_errors.py tests/test_fuzz.py tests/test_render.py

# The Gymnasium version a venv runs: $(call gymnasium_in,VENV).
gymnasium_in = $$($(1)/bin/python -c 'import gymnasium; print(gymnasium.__version__)')

.PHONY: venv test test-gym-latest test-all lint benchmark notebooks screenshots clean \
        xinxin-source

venv: $(STAMP)

# Re-run whenever pyproject.toml changes (the stamp is older than it).
# torch is installed first, pinned to this machine's CPU build (the rl extra states a range,
# torch>=2.4, which this build satisfies), so that nothing pulls another (CUDA, several GB)
# torch build.
$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON)" ]; then echo "error: neither python3.11 nor python3 found on PATH" >&2; exit 1; fi
	@echo "==> creating $(VENV) with $(PYTHON) ($$($(PYTHON) --version 2>&1))"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar off 'torch==2.13.0'
	$(BIN)/python -m pip install --progress-bar off -e '.[dev,rl,ray,anchor]'
	@touch $(STAMP)
	@echo "==> $(VENV) ready"

$(GYM_STAMP): pyproject.toml
	@if [ -z "$(PYTHON)" ]; then echo "error: neither python3.11 nor python3 found on PATH" >&2; exit 1; fi
	@echo "==> creating $(GYM_VENV) with gymnasium==$(GYM_LATEST), without Ray"
	$(PYTHON) -m venv $(GYM_VENV)
	$(GYM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GYM_VENV)/bin/python -m pip install --progress-bar off -e '.[test]' 'gymnasium==$(GYM_LATEST)'
	@touch $(GYM_STAMP)
	@echo "==> $(GYM_VENV) ready"

# The replay viewer's browser test drives Debian's chromium (Playwright's own browser
# download cannot reach its servers from the project's machines): installed only when absent.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(CHROMIUM):
	@echo "==> installing Debian's chromium for the viewer's browser test"
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test: $(STAMP) | $(CHROMIUM)
	@echo "==> ruff check ."
	$(BIN)/ruff check .
	@echo "==> pytest in $(VENV), gymnasium $(call gymnasium_in,$(VENV))"
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory test-gym-latest
	@echo "==> make test: OK (ruff clean, all tests passed; the environment tests with both Gymnasium versions)"

# The environment tests again with the newest Gymnasium (PYTEST_ARGS are not passed:
# a -k meant for the whole suite could select nothing here).
test-gym-latest: $(GYM_STAMP)
	@echo "==> pytest in $(GYM_VENV), gymnasium $(call gymnasium_in,$(GYM_VENV)): $(GYM_TESTS)"
	$(GYM_VENV)/bin/python -m pytest $(GYM_TESTS)

test-all: $(STAMP) | $(CHROMIUM)
	@echo "==> ruff check ."
	$(BIN)/ruff check .
	@echo "==> pytest --runslow in $(VENV), gymnasium $(call gymnasium_in,$(VENV))"
	$(BIN)/python -m pytest --runslow $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory test-gym-latest
	@echo "==> make test-all: OK (ruff clean, all tests including slow passed; the environment tests with both Gymnasium versions)"

lint: $(STAMP)
	@echo "==> ruff check ."
	$(BIN)/ruff check .

# The main job: the engine's throughput table, then the win-rate tournament with plots
# (results/throughput.json and results/win_rates__seed0/).
benchmark: $(STAMP)
	@echo "==> throughput benchmark"
	$(BIN)/python -m experiments.throughput --seconds 0.5
	@echo "==> win-rate benchmark"
	$(BIN)/python -m experiments.win_rates --workers 2 --overwrite $(ARGS)

# Execute every notebook and store it with its outputs (plots visible on GitHub without
# running them). win_rates shows make benchmark's results/win_rates__seed0 when it holds a
# run, else plays the same tournament (about a minute on 2 cores); agents plays its ladder and
# league at their real sizes (about two minutes). SMOOR_NOTEBOOK_DEALS, the tests' reduced
# size, is unset: the stored outputs are the real runs (tests/test_notebooks.py checks).
notebooks: $(STAMP)
	env -u SMOOR_NOTEBOOK_DEALS $(BIN)/jupyter-execute --inplace --timeout=600 notebooks/*.ipynb
	@echo "==> notebooks stored with their outputs: $$(du -ch notebooks/*.ipynb | tail -1)"

# The README's pictures (docs/img/): smoor-play's terminal, the SVG table, smoor-view's page.
screenshots: $(STAMP) | $(CHROMIUM)
	$(BIN)/python -m experiments.screenshots

# xinxin, issue 43's second anchor: Sturtevant's Hearts program (C++, GPL-3.0, on GitHub
# only) at the commit its protocol names, where experiments/xinxin_anchor.py and its tests
# look for it; they build it with g++ (tests/test_xinxin_anchor.py skips its games
# without it). `make xinxin-source XINXIN_REPO=<a local clone>` for a machine without
# GitHub.
XINXIN_REPO   ?= https://github.com/nathansttt/hearts
XINXIN_COMMIT := 6ba11548af49d3953f989f50b318ee4f4c1b91f7
XINXIN_DIR    := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/smoor-env/xinxin/hearts

xinxin-source:
	@command -v g++ >/dev/null || { echo "error: g++ is needed to build xinxin (apt-get install g++)" >&2; exit 1; }
	@[ -d "$(XINXIN_DIR)/.git" ] || git clone -q "$(XINXIN_REPO)" "$(XINXIN_DIR)"
	git -C "$(XINXIN_DIR)" fetch -q "$(XINXIN_REPO)"
	git -C "$(XINXIN_DIR)" -c advice.detachedHead=false checkout -q $(XINXIN_COMMIT)
	@echo "==> xinxin's source at $(XINXIN_COMMIT) in $(XINXIN_DIR)"

clean:
	rm -rf $(VENV) $(GYM_VENV) build dist *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
