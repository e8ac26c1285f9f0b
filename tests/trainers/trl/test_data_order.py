"""trainers.trl.data_order: a sampler advanced past k epochs draws what the sampler that ran them
draws next; what is not a shuffled RepeatSampler is left alone; the instance wrapper is applied
once. (Whole runs resumed in a later epoch: tests/trainers/experiments/test_trl_run.py.)"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the trl extra: pip install -e '.[trl]'")

from trl.trainer.utils import RepeatSampler

from trainers.trl.data_order import KeepDataOrder, keep_data_order, skip_epochs


def sampler(shuffle: bool = True) -> RepeatSampler:
    return RepeatSampler(list(range(12)), mini_repeat_count=2, batch_size=3, shuffle=shuffle,
                         seed=5)  # fmt: skip


@pytest.mark.parametrize("epochs", [1, 2, 5])
def test_a_sampler_skipped_past_k_epochs_draws_the_k_plus_first_epoch(epochs: int) -> None:
    ran = sampler()
    for _ in range(epochs):
        list(ran)
    skipped = sampler()
    assert skip_epochs(skipped, epochs)
    expected = list(ran)
    assert list(skipped) == expected
    assert expected != list(sampler())  # epoch 0's order is another one: the skip matters


def test_nothing_to_skip_leaves_the_sampler_alone() -> None:
    for s, k in [(sampler(), 0), (sampler(shuffle=False), 3), (SimpleNamespace(shuffle=True), 2)]:
        assert not skip_epochs(s, k)
    plain = sampler()
    skip_epochs(plain, 0)
    assert list(plain) == list(sampler())


class _Base:
    """The two Trainer methods the mixin wraps, as transformers calls them in ``train``."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs

    def _get_train_sampler(self, dataset: Any = None) -> RepeatSampler:
        return sampler()

    def _init_training_state(self, *args: Any) -> tuple[int, int]:
        return self.epochs, 7


class _Kept(KeepDataOrder, _Base):
    pass


def test_the_mixin_and_the_wrapper_skip_the_epochs_the_trainer_resumes_in() -> None:
    ran = sampler()
    for _ in range(3):
        list(ran)
    expected = list(ran)
    for trainer in (_Kept(3), keep_data_order(_Base(3))):
        made = trainer._get_train_sampler()
        assert trainer._init_training_state(None) == (3, 7)
        assert list(made) == expected
    wrapped = keep_data_order(_Base(1))
    once = wrapped._get_train_sampler
    assert keep_data_order(wrapped) is wrapped and wrapped._get_train_sampler is once
    kept = _Kept(1)
    assert keep_data_order(kept) is kept and "_get_train_sampler" not in vars(kept)


def test_the_allocating_trainer_takes_the_mixins_methods_first() -> None:
    from trainers.trl.trainer import AllocatingGRPOTrainer

    assert issubclass(AllocatingGRPOTrainer, KeepDataOrder)
    mro = [c.__name__ for c in AllocatingGRPOTrainer.__mro__]
    assert mro.index("KeepDataOrder") < mro.index("GRPOTrainer")  # its methods come first
