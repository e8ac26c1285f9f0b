"""Seeds and the data order of a training run.

Every random choice of a run derives its seed from the master seed and a purpose number
(``derive_seed``): 1 the data order of an epoch, 2 the allocator of a step, 3 the sampling of a
round, 4 the held-out evaluation. ``DataOrder`` walks the training prompts epoch by epoch in a
seeded permutation; ``peek`` shows the next batches without consuming them (what benchmarks that
feed another trainer the same prompts use).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

#: purposes of ``derive_seed`` (the second part of every seed)
DATA_ORDER, ALLOCATOR, SAMPLING, EVALUATION, GRADIENT_NOISE = 1, 2, 3, 4, 5

ExampleT = TypeVar("ExampleT")


def derive_seed(*parts: int) -> int:
    """A 32-bit seed from integer parts (master seed, purpose, step, round, rank).

    ``numpy.random.SeedSequence`` ignores trailing zero parts, so ``derive_seed(s, p, 0)`` is
    ``derive_seed(s, p)``: every purpose uses a fixed number of parts, so no two uses collide.
    """
    return int(np.random.SeedSequence([int(p) & 0xFFFFFFFF for p in parts]).generate_state(1)[0])


def _example_id(example: Any) -> Any:
    return example.id


class DataOrder(Generic[ExampleT]):
    """The seeded order in which a run draws its training examples.

    Each epoch is a fresh permutation seeded by ``(seed, DATA_ORDER, epoch)``; a batch takes the
    next ``batch_size`` examples (across an epoch boundary if needed), sorted by ``id``, and each
    of ``world`` ranks keeps every ``world``-th of them from its ``rank``.

    >>> order = DataOrder(list(range(5)), seed=0, key=lambda e: e)
    >>> [len(b) for b in order.peek(2, batch_size=4)] == [4, 4] and order.cursor == 0
    True
    """

    def __init__(
        self,
        examples: list[ExampleT],
        *,
        seed: int,
        key: Callable[[ExampleT], Any] | None = None,
    ) -> None:
        self.examples = examples
        self.seed = seed
        self._key: Callable[[ExampleT], Any] = key if key is not None else _example_id
        self.epoch = 0
        self.cursor = 0
        self.order = self._epoch_order(0)

    def _epoch_order(self, epoch: int) -> NDArray[np.int64]:
        rng = np.random.default_rng(derive_seed(self.seed, DATA_ORDER, epoch))
        return rng.permutation(len(self.examples)).astype(np.int64)

    def next_batch(self, batch_size: int, *, rank: int = 0, world: int = 1) -> list[ExampleT]:
        """The next ``batch_size`` examples in the seeded order; this rank's shard of them."""
        picked: list[int] = []
        while len(picked) < batch_size:
            if self.cursor >= self.order.size:
                self.epoch += 1
                self.cursor = 0
                self.order = self._epoch_order(self.epoch)
            take = min(batch_size - len(picked), self.order.size - self.cursor)
            picked.extend(self.order[self.cursor : self.cursor + take].tolist())
            self.cursor += take
        batch = [self.examples[i] for i in picked]
        batch.sort(key=self._key)
        return batch[rank::world]

    def peek(
        self, n: int, *, batch_size: int, rank: int = 0, world: int = 1
    ) -> list[list[ExampleT]]:
        """The next ``n`` batches, in order, without consuming them."""
        saved = (self.epoch, self.cursor, self.order)
        try:
            return [self.next_batch(batch_size, rank=rank, world=world) for _ in range(n)]
        finally:
            self.epoch, self.cursor, self.order = saved

    def seek(self, epoch: int, cursor: int) -> None:
        """Continue from ``epoch`` at position ``cursor`` (what a checkpoint restores)."""
        self.epoch, self.cursor = int(epoch), int(cursor)
        self.order = self._epoch_order(self.epoch)
