"""The benchmarks of the ``adaroll_env`` layer: env throughput (``throughput``, behind
``scripts/bench_env.py``)."""
