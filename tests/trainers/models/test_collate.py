import numpy as np
import pytest
import torch

from trainers.grpo import per_token_logps
from trainers.models.collate import collate_prompt_completions, pad_batch, pad_rows, position_ids


def test_pad_rows_right_and_left_by_hand():
    rows = [[1, 2, 3], [4], []]
    assert pad_rows(rows).tolist() == [[1, 2, 3], [4, 0, 0], [0, 0, 0]]
    assert pad_rows(rows, side="left", value=9).tolist() == [[1, 2, 3], [9, 9, 4], [9, 9, 9]]
    assert pad_rows(rows).dtype == torch.long


def test_pad_rows_cuts_to_width_and_keeps_float_values():
    rows = [np.array([0.5, -1.25, 2.0], dtype=np.float32), np.array([3.0], dtype=np.float32)]
    out = pad_rows(rows, width=2, value=0.0, dtype=torch.float32)
    assert out.dtype == torch.float32
    assert out.tolist() == [[0.5, -1.25], [3.0, 0.0]]
    wider = pad_rows(rows, width=5, value=0.0, dtype=torch.float32)
    assert wider.tolist() == [[0.5, -1.25, 2.0, 0.0, 0.0], [3.0, 0.0, 0.0, 0.0, 0.0]]


def test_pad_rows_accepts_tensors_and_drops_their_gradient():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    out = pad_rows([a * 2, torch.tensor([5.0])], dtype=torch.float32, width=3)
    assert out.tolist() == [[2.0, 4.0, 0.0], [5.0, 0.0, 0.0]]
    assert not out.requires_grad


def test_pad_rows_empty_batch_and_bad_arguments():
    assert pad_rows([]).shape == (0, 0)
    with pytest.raises(ValueError, match="side must be 'left' or 'right', got 'middle'"):
        pad_rows([[1]], side="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="width must be >= 0"):
        pad_rows([[1]], width=-1)


def test_pad_batch_masks_exactly_the_real_tokens():
    ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=0, side="left")
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=2, side="right", width=4)
    assert ids.tolist() == [[5, 6, 7, 2], [8, 2, 2, 2]]
    assert mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0]]


def test_position_ids_count_real_tokens_only():
    mask = torch.tensor([[0, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]])
    assert position_ids(mask).tolist() == [[0, 0, 0, 1, 2, 2], [0, 1, 2, 3, 4, 5]]


def test_collate_prompt_completions_three_prompt_ragged_batch_by_hand():
    prompts = [[1, 2], [3], [4, 5, 6]]
    completions = [[7], [8, 9, 10], []]
    b = collate_prompt_completions(prompts, completions, pad_id=0, width=4)
    assert b.prompt_width == 3
    assert b.input_ids.tolist() == [
        [0, 1, 2, 7, 0, 0, 0],
        [0, 0, 3, 8, 9, 10, 0],
        [4, 5, 6, 0, 0, 0, 0],
    ]
    assert b.attention_mask.tolist() == [
        [0, 1, 1, 1, 0, 0, 0],
        [0, 0, 1, 1, 1, 1, 0],
        [1, 1, 1, 0, 0, 0, 0],
    ]
    assert b.position_ids.tolist() == [
        [0, 0, 1, 2, 2, 2, 2],
        [0, 0, 0, 1, 2, 3, 3],
        [0, 1, 2, 2, 2, 2, 2],
    ]
    assert b.targets.tolist() == [[7, 0, 0, 0], [8, 9, 10, 0], [0, 0, 0, 0]]
    assert b.completion_mask.dtype == torch.float32
    assert b.completion_mask.tolist() == [[1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]]
    # The logits that predict completion token j sit at column P - 1 + j.
    logits = torch.arange(7.0).expand(3, 7)[..., None]  # [b, P+T, 1]
    assert b.completion_logits(logits)[0, :, 0].tolist() == [2.0, 3.0, 4.0, 5.0]


def test_collate_prompt_completions_gives_the_unpadded_log_probs(tiny_policy):
    """The padded forward pass scores each completion as the row alone would."""
    model, tok = tiny_policy
    prompts = [tok("3+4=").input_ids, tok("512+77=").input_ids]
    completions = [[*tok("7", add_special_tokens=False).input_ids, tok.eos_token_id], [5, 6]]
    b = collate_prompt_completions(prompts, completions, pad_id=tok.pad_token_id)
    with torch.no_grad():
        logits = model(**b.model_inputs(), use_cache=False).logits  # [b, P+T, V]
    batched = per_token_logps(b.completion_logits(logits), b.targets)  # [b, T]
    for k, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        with torch.no_grad():
            alone = model(input_ids=torch.tensor([p + c]), use_cache=False).logits
        alone_lp = torch.log_softmax(alone[0, len(p) - 1 : -1].float(), -1)
        expect = alone_lp.gather(-1, torch.tensor(c)[:, None])[:, 0]
        torch.testing.assert_close(batched[k, : len(c)], expect, atol=1e-4, rtol=1e-4)


def test_collate_prompt_completions_refuses_mismatched_or_empty_prompts():
    with pytest.raises(ValueError, match="2 prompts but 1 completions"):
        collate_prompt_completions([[1], [2]], [[3]], pad_id=0)
    with pytest.raises(ValueError, match=r"prompt rows \[1\] are empty"):
        collate_prompt_completions([[1], []], [[3], [4]], pad_id=0)
