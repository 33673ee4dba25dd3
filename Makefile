# Two commands do all the set-up on a fresh machine (see README):
#   make lab    venv + packages + default model, then JupyterLab on notebooks/
#   make test   the same set-up (plus Chromium for the browser test), then every test
# Both are idempotent: a second run only checks that everything is in place.
# Also: make test-fast (unit tests only), make notebooks (re-execute the lessons),
#       make readme (regenerate the README's lesson table), make browser (install Chromium).

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.viz-installed
PORT ?= 8888
# Extra `jupyter lab` flags, e.g. `make lab LAB_FLAGS=--no-browser`.
LAB_FLAGS ?=
# `make notebooks NB=00` re-executes only lesson 00 (default: every lesson).
NB ?=
CHROMIUM ?= /usr/bin/chromium
# jupyter refuses to run as root unless told to (containers, CI).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# nbval over the committed notebooks: each cell re-run and compared to its saved outputs, after
# the sanitizers in tests/nbval-sanitize.cfg; tools/nbval_memory.py adds a peak-memory check.
NBVAL := --nbval --nbval-current-env --nbval-cell-timeout=600 \
	--nbval-sanitize-with tests/nbval-sanitize.cfg -p tools.nbval_memory -p tools.nbval_tolerance

.PHONY: setup model lab test test-other-kernels test-fast lint notebooks readme bench browser \
	clean engines

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# llama.cpp's server (requirements-engines.txt) compiles from source: tools/engines.py builds
# its wheel once per CPU recipe, portably (no -march=native, no AMX: the native build died with
# SIGILL on an AMX cloud VM), into ~/.cache/llm-inference-viz-wheels/<recipe>/, and every later
# set-up installs it from there (-c requirements.txt: its server's dependencies stay inside
# requirements.txt's ranges). `make engines` builds it again.

# Reinstall only when a requirements file, pyproject.toml or the engine recipe changed since
# the last install. pip does not byte-compile (--no-compile): $(PYC) does, beside the rest.
$(STAMP): requirements.txt requirements-engines.txt pyproject.toml tools/engines.py | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt
	$(BIN)/python -m tools.engines install -c requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -e .
	touch $@

# Every installed module byte-compiled once (what pip does unless --no-compile; here on every
# core, and it skips what does not compile, as pip does): a Python started with
# PYTHONDONTWRITEBYTECODE=1 would otherwise compile torch and transformers again at each start.
PYC := $(VENV)/.viz-compiled
$(PYC): $(STAMP)
	$(BIN)/python -c "import compileall, sysconfig; compileall.compile_dir(sysconfig.get_path('purelib'), quiet=2, workers=0)"
	touch $@

# optimum-quanto's C++ kernel (4- and 2-bit integers, lesson 11), built now so no lesson waits
# (after the byte-compiling: its compiler takes both cores, and its Python imports torch).
QUANTO := $(VENV)/.viz-quanto
$(QUANTO): $(PYC)
	$(BIN)/python -c "from viz import compat; print(f'optimum-quanto kernel ready ({compat.build_quanto_kernel():.0f} s)')"
	touch $@

engines: | $(BIN)/python
	$(BIN)/python -m tools.engines install --rebuild -c requirements.txt
	$(BIN)/python -m tools.engines check

# After the install, the default model (one core) and the byte-compiling (every core), then
# the kernel: a make of their own with 2 jobs, each step's output printed whole when it ends.
# A fresh set-up on 2 cores (`time make setup`, llama.cpp's wheel cached) took 134 s with every
# step one after the other and pip byte-compiling, 122 s like this.
setup: $(STAMP)
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(PYC) $(QUANTO) model

# Download (once), check and dequantize the default model into the local cache.
model: $(STAMP)
	$(BIN)/python -m viz fetch-model

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks --port=$(PORT) $(ROOT_FLAG) $(LAB_FLAGS)

# Every test: unit tests, the pairing/size checks, the Binder build emulation, the browser
# test, then nbval over notebooks/ (with each lesson's peak memory). Each lesson runs once:
# nbval compares the run the browser test made and saved (tools/nbval_replay.py), and runs a
# lesson in a kernel of its own only where there is no such run (no browser here). The browser
# runs the lessons whose outputs are deterministic with another CPU's kernels (another CPU's
# rounding: what `make test-other-kernels` checks), the others natively.
# --durations: every run shows where its time goes (DURATIONS=0: every test's, not the slowest
# 25; pytest keeps only the last --durations it is given). TEST_WORKERS: pytest-xdist workers (2: one
# per core of a small machine; the lessons run one at a time on one of them, the other tests
# beside them, tests/conftest.py); `make test TEST_WORKERS=0` runs everything in one process.
# OMP_WAIT_POLICY=PASSIVE: with two processes' torch threads on two cores, OpenMP threads that
# spin while they wait for each other take the cores the other process needs.
TEST_WORKERS ?= 2
DURATIONS ?= 25
XDIST := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder)
XDIST_ENV := $(if $(filter-out 0,$(TEST_WORKERS)),OMP_WAIT_POLICY=PASSIVE)
test: setup browser lint
	$(XDIST_ENV) $(BIN)/python -m pytest tests notebooks $(NBVAL) -p tools.nbval_replay \
		--nbval-replay artifacts/browser/runs --durations=$(DURATIONS) $(XDIST)

# Another CPU's kernels round floats differently in the last bits: the saved notebooks (executed
# natively) must still pass nbval there. torch's kernels set as another CPU's stand in, on
# the lessons whose compared outputs are computed, not timed, from an empty folder of
# measurements (tools/other_kernels.py). `make test` makes the same check through the browser
# test (those lessons run there with these kernels, and nbval compares the runs), and runs this
# command on lesson 01 (tests/test_other_kernels.py).
test-other-kernels: setup
	$(BIN)/python -m tools.other_kernels

# Only the unit tests (no notebooks, no browser, no Binder build): a quick check while editing.
test-fast: setup lint
	$(BIN)/python -m pytest tests -m "not slow"

# ruff over the code, the lessons, the tests and the benchmarks (settings in pyproject.toml),
# then the layout of everything but the lessons (`ruff format .` fixes it).
lint: setup
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .

# Re-execute every notebook from its source in lessons/ (outputs kept, widget JavaScript
# dropped, peak memory and run time recorded), then regenerate the README's lesson table.
notebooks: setup browser
	$(BIN)/python -m tools.course execute $(NB)

readme: $(STAMP)
	$(BIN)/python -m tools.course readme

# Chromium for the real-browser test (tests/test_browser.py), from Debian's packages: installed
# when missing and this is root with apt-get (CI, containers). Elsewhere the browser test skips
# and says how to enable it; in CI (VIZ_CI=1) that skip fails the run.
browser:
	@if [ -x "$(CHROMIUM)" ]; then \
		: ; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Chromium for the browser test (apt-get, about a minute)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			chromium chromium-driver fonts-liberation >/dev/null; \
	else \
		echo "note: no Chromium at $(CHROMIUM): the browser test will skip. To run it, install" \
		     "Debian/Ubuntu's chromium (sudo apt-get install chromium fonts-liberation) or point" \
		     "VIZ_CHROMIUM at a Chrome/Chromium binary."; \
	fi

clean:
	rm -rf $(VENV) .pytest_cache artifacts

# The tool's speed budget and the performance lab on the real model: medians and ratios printed
# (a benchmark, not a test; ~8 min on 2 cores). Results go to artifacts/perf-lab, not viz/data
# (regenerate the shipped references with `benchmarks/perf_lab.py` itself).
# `make bench BENCH_FLAGS="--skip-cold --repeats 5"` passes flags to speed_budget.py.
BENCH_FLAGS ?=
bench: setup
	$(BIN)/python benchmarks/speed_budget.py $(BENCH_FLAGS)
	$(BIN)/python benchmarks/perf_lab.py --quiet --out artifacts/perf-lab
