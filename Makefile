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

.PHONY: run test samples lock
run: $(PKG)
	$(BIN)/rwb gui --demo

test: $(PKG)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

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
