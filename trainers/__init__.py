"""trainers: the GRPO trainer shared by every allocator, and the ``adaroll`` command line.

Importing this package imports nothing heavy; the command line's dispatcher is
``trainers.cli``.
"""
