"""Seeds by purpose and the epoch order of the prompts (trainers.grpo.data_order)."""

from __future__ import annotations

from trainers.grpo.data_order import DataOrder, derive_seed


def test_every_example_once_per_epoch_then_a_new_order():
    order = DataOrder(list(range(10)), seed=3, key=lambda e: e)
    first = [e for _ in range(5) for e in order.next_batch(2)]
    assert sorted(first) == list(range(10)) and (order.epoch, order.cursor) == (0, 10)
    second = [e for _ in range(5) for e in order.next_batch(2)]
    assert sorted(second) == list(range(10)) and order.epoch == 1
    assert first != second  # each epoch its own permutation


def test_a_batch_across_the_epoch_boundary_and_shards():
    order = DataOrder(list(range(5)), seed=0, key=lambda e: e)
    order.next_batch(4)
    batch = order.next_batch(4)  # one from epoch 0, three from epoch 1, sorted by key
    assert len(batch) == 4 and batch == sorted(batch) and order.epoch == 1
    again = DataOrder(list(range(5)), seed=0, key=lambda e: e)
    again.next_batch(4)
    shards = [again.peek(1, batch_size=4, rank=r, world=2)[0] for r in (0, 1)]
    assert shards == [batch[0::2], batch[1::2]]


def test_peek_consumes_nothing_and_seek_resumes():
    order = DataOrder(list(range(7)), seed=1, key=lambda e: e)
    ahead = order.peek(3, batch_size=3)
    assert (order.epoch, order.cursor) == (0, 0)
    assert [order.next_batch(3) for _ in range(3)] == ahead
    resumed = DataOrder(list(range(7)), seed=1, key=lambda e: e)
    resumed.seek(order.epoch, order.cursor)
    assert resumed.next_batch(3) == order.next_batch(3)


def test_derive_seed_depends_on_every_part():
    seeds = {derive_seed(0, 1), derive_seed(0, 2), derive_seed(1, 1), derive_seed(0, 1, 5)}
    assert len(seeds) == 4 and all(0 <= s < 2**32 for s in seeds)
    assert derive_seed(0, 1, 0) == derive_seed(0, 1)  # trailing zeros: SeedSequence's rule
