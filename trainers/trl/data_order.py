"""A resumed TRL run reads its training prompts in the order the run that stopped would have.

``trl.GRPOTrainer`` draws prompts through ``trl``'s ``RepeatSampler``, whose private generator is
seeded once and draws one permutation of the dataset per epoch. transformers' resume skips the
batches already trained in the resumed epoch, but of a freshly built sampler: a run resumed in
its epoch k > 0 reads epoch 0's permutation where the run that stopped would have read epoch k's,
and from the resume on it trains on other batches (TRL 1.14 and 1.16 with transformers 5.25;
measured on a spell run of 156 steps an epoch, resumed at step 400: its first resumed step
already differed from the unstopped run's). Advancing the new sampler's generator past the epochs
already trained, one permutation each as iterating it would draw, restores the order exactly.

:class:`KeepDataOrder` does it for a trainer class built on ``trl.GRPOTrainer`` (the base of
``AllocatingGRPOTrainer``); :func:`keep_data_order` for a trainer already built (``CGRPOTrainer``,
or a plain ``trl.GRPOTrainer``). A sampler that is not shuffled, or draws its order otherwise, is
left as it is.
"""

from __future__ import annotations

from typing import Any

import torch


def skip_epochs(sampler: Any, epochs: int) -> bool:
    """Advance ``sampler`` past ``epochs`` epochs, if it is a shuffled ``RepeatSampler`` (one
    ``torch.randperm`` of its generator per epoch, as its ``__iter__`` draws); True if it did."""
    from trl.trainer.utils import RepeatSampler

    if epochs <= 0 or not isinstance(sampler, RepeatSampler) or not sampler.shuffle:
        return False
    for _ in range(epochs):
        torch.randperm(sampler.num_samples, generator=sampler.generator)
    return True


class KeepDataOrder:
    """Mixin for a ``transformers.Trainer`` subclass that trains through a ``RepeatSampler``: on
    resume, the sampler starts at the epoch the checkpoint is in (module docstring)."""

    _train_sampler: Any = None

    def _get_train_sampler(self, *args: Any, **kwargs: Any) -> Any:
        sampler = super()._get_train_sampler(*args, **kwargs)  # type: ignore[misc]
        self._train_sampler = sampler
        return sampler

    def _init_training_state(self, *args: Any, **kwargs: Any) -> Any:
        epochs, steps = super()._init_training_state(*args, **kwargs)  # type: ignore[misc]
        skip_epochs(self._train_sampler, int(epochs))
        return epochs, steps


def keep_data_order(trainer: Any) -> Any:
    """Give an already built trainer :class:`KeepDataOrder`'s resume (its two methods wrapped on
    the instance); a trainer that has it already is returned as it is."""
    if isinstance(trainer, KeepDataOrder) or getattr(trainer, "_keeps_data_order", False):
        return trainer
    get_sampler, init_state = trainer._get_train_sampler, trainer._init_training_state
    made: list[Any] = []

    def _get_train_sampler(*args: Any, **kwargs: Any) -> Any:
        sampler = get_sampler(*args, **kwargs)
        made.append(sampler)
        return sampler

    def _init_training_state(*args: Any, **kwargs: Any) -> Any:
        epochs, steps = init_state(*args, **kwargs)
        if made:
            skip_epochs(made[-1], int(epochs))
        return epochs, steps

    trainer._get_train_sampler = _get_train_sampler
    trainer._init_training_state = _init_training_state
    trainer._keeps_data_order = True
    return trainer
