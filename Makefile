# rag-search: set-up, demo and tests. `make demo` and `make test` are the two
# commands the README opens with; both create the virtual environment first.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# torch goes in first and alone, so that sentence-transformers finds it and does
# not pull the CUDA build. On machines without a local CPU wheel, pass e.g.
#   make setup TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_VERSION := 2.13.0
TORCH_PIP_ARGS ?=
DEMO_QUERY ?= why did we turn off self-heal in ArgoCD?

.PHONY: setup demo test test-fast clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==$(TORCH_VERSION) $(TORCH_PIP_ARGS)
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	@# The ONNX export of the model, made once here; index runs copy it next to their index.
	@# The libraries' telemetry off first, before torch and onnxruntime load (rag_search/core/telemetry.py).
	$(PY) -c "import sys; sys.path.insert(0, 'scripts'); \
	from rag_search.core.telemetry import keep_libraries_local; keep_libraries_local(); \
	from rag_search.model.embedding import find_model; from rag_search.model.onnx_export import prepare_cache; prepare_cache(find_model())"
	touch $@

# Index the bundled example corpus into a throwaway data dir, then search it.
# The index summary goes to stderr, so stdout is exactly the search JSON.
demo: setup
	@home=$$(mktemp -d) && trap 'rm -rf "$$home"' EXIT && \
	$(PY) scripts/index_personal.py --data-dir "$$home/data" examples/state >&2 && \
	$(PY) scripts/search.py --data-dir "$$home/data" "$(DEMO_QUERY)"

# Lint and type-check first (mypy's settings: pyproject.toml), then the whole suite. Two workers: many tests wait on
# script subprocesses, so two cores run them ~1.5x faster.
test: setup
	$(VENV)/bin/ruff check scripts tests bench
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n 2

# The edit loop: the tests that start no Python process (tests/conftest.py marks the others `processes`).
test-fast: setup
	$(PY) -m pytest -q -n 2 -m "not processes"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
