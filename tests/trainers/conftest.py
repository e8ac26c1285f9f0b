"""The trainer tests' fixtures (``tiny_model_dir``, ``tiny_policy``) live in the root
``tests/conftest.py``, shared with ``tests/vllm``; this file keeps the package's place for more."""
