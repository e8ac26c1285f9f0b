"""The ranks of a run (trainers.grpo.parallel.Ranks): identity in one process, sums across many."""

from __future__ import annotations

import torch

from trainers.grpo.parallel import Ranks


class TwoRanks:
    """A stand-in accelerator whose other rank holds ``other``."""

    def __init__(self, other):
        self.other = other

    def reduce(self, x, reduction):
        assert reduction == "sum"
        return x + torch.as_tensor(self.other, dtype=x.dtype)

    def gather(self, x):
        return torch.cat([x, torch.as_tensor(self.other, dtype=x.dtype)])


def test_one_process_is_the_identity():
    r = Ranks()
    assert r.sum({"a": 1.5}) == {"a": 1.5} and r.most(3) == 3 and r.from_rank0(2.0) == 2.0


def test_sums_and_most_over_two_ranks():
    # keys are reduced in sorted order: a, b
    r = Ranks(TwoRanks([10.0, 20.0]), rank=0, world=2)
    assert r.sum({"b": 2.0, "a": 1.0}) == {"a": 11.0, "b": 22.0}
    assert Ranks(TwoRanks([5]), rank=1, world=2).most(3) == 5
