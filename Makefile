# Two commands do all set-up on a fresh machine:
#   make run    the main job: the quickstart experiment (every solver of every family on
#               the embedded instances, verified; results under runs/, HTML report beside)
#   make test   the test suite (GPU tests skip, with the reason, where no GPU is usable)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# cuda12 brings CuPy + NVRTC, so kernels compile (and are tested) even without a GPU.
EXTRAS ?= dev,ref,cuda12
# What `make run` runs; ARGS adds Hydra overrides (RUN= for a single job of your own).
RUN    ?= -m +experiment=quickstart

.PHONY: run test lint clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# compat mode puts the checkout itself on sys.path, so Hydra's plugin scan finds hydra_plugins/
	# in place; conf/ and kernels/ are read from the checkout (a wheel carries them inside the package)
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]' --config-settings editable_mode=compat
	touch $@

run: $(BIN)/.installed
	$(BIN)/matchbench $(RUN) $(ARGS)

test: $(BIN)/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check matchbench hydra_plugins tests setup.py

clean:
	rm -rf $(VENV)
