"""Padding and collation, written once for the trainer, the HF engine and the warm start.

- ``pad_rows``: ragged rows (lists, numpy arrays or 1-D tensors) into one ``[N, T]`` tensor,
  padded on the left or the right, cut to a width when one is given.
- ``pad_batch``: token rows into ``input_ids`` and ``attention_mask`` (generation pads prompts on
  the left; supervised batches pad on the right).
- ``position_ids``: positions counted over real tokens only, so left padding does not shift them.
- ``collate_prompt_completions``: the layout of a GRPO forward pass — prompts left-padded to the
  longest prompt ``P``, completions right after them, right-padded to ``T`` — with the targets and
  mask of the completion tokens (their logits are ``logits[:, P - 1 : P - 1 + T]``).
- ``count_positions_over_tokens``: the same positions for a learned-position model (GPT-2) in
  forward passes whose caller gives none (TRL's); ``load_policy`` installs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

Row = Sequence[int] | Sequence[float] | np.ndarray | torch.Tensor


def pad_rows(
    rows: Sequence[Row],
    *,
    value: float = 0,
    width: int | None = None,
    side: Literal["left", "right"] = "right",
    dtype: torch.dtype = torch.long,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Stack ragged ``rows`` into a ``[N, T]`` tensor filled with ``value`` where a row ends.

    Args:
        rows: the rows: sequences of numbers, numpy arrays or 1-D tensors (values are copied,
            without gradient).
        value: the padding value.
        width: ``T``; ``None`` is the longest row's length. Longer rows keep their first
            ``width`` entries.
        side: where the padding goes: ``"right"`` (row at the start) or ``"left"`` (row at the
            end, as generation wants prompts).
        dtype: the tensor's dtype.
        device: where the tensor lives; ``None`` is the first tensor row's device, else the CPU.

    >>> pad_rows([[1, 2, 3], [4]], side="left").tolist()
    [[1, 2, 3], [0, 0, 4]]
    >>> pad_rows([[1.5, 2.5, 3.5], [4.0]], width=2, dtype=torch.float32).tolist()
    [[1.5, 2.5], [4.0, 0.0]]
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    if width is None:
        width = max((len(r) for r in rows), default=0)
    elif width < 0:
        raise ValueError(f"width must be >= 0 or None (the longest row), got {width}")
    if device is None:
        device = next((r.device for r in rows if isinstance(r, torch.Tensor)), "cpu")
    out = torch.full((len(rows), width), value, dtype=dtype, device=device)  # [N, T]
    for k, row in enumerate(rows):
        n = min(len(row), width)
        if n == 0:
            continue
        piece = _as_tensor(row[:n], dtype)  # [n]
        if side == "right":
            out[k, :n] = piece
        else:
            out[k, width - n :] = piece
    return out


def _as_tensor(values: Any, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(values, torch.Tensor):
        return values.detach().to(dtype)
    return torch.as_tensor(np.asarray(values), dtype=dtype)


def pad_batch(
    rows: Sequence[Sequence[int]],
    *,
    pad_id: int,
    side: Literal["left", "right"],
    width: int | None = None,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token rows as ``input_ids`` and ``attention_mask`` (both ``[N, T]``, long).

    >>> ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=0, side="left")
    >>> ids.tolist(), mask.tolist()
    ([[5, 6, 7], [0, 0, 8]], [[1, 1, 1], [0, 0, 1]])
    """
    ids = pad_rows(rows, value=pad_id, width=width, side=side, device=device)  # [N, T]
    ones = [[1] * len(r) for r in rows]
    mask = pad_rows(ones, value=0, width=ids.shape[1], side=side, device=ids.device)  # [N, T]
    return ids, mask


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted over real tokens (padding before a row's first token reads 0).

    >>> position_ids(torch.tensor([[0, 0, 1, 1, 1]])).tolist()
    [[0, 0, 0, 1, 2]]
    """
    return (attention_mask.cumsum(-1) - 1).clamp(min=0)  # [N, T]


@dataclass(frozen=True)
class PromptCompletionBatch:
    """Prompts and completions laid out for one forward pass (see ``collate_prompt_completions``).

    ``input_ids``, ``attention_mask`` and ``position_ids`` are ``[b, P + T]``; ``targets`` (the
    completion tokens, ``pad_id`` past a row's end) and ``completion_mask`` (float32, 1 on real
    completion tokens) are ``[b, T]``; ``prompt_width`` is ``P``.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    targets: torch.Tensor
    completion_mask: torch.Tensor
    prompt_width: int

    def model_inputs(self) -> dict[str, torch.Tensor]:
        """The keyword arguments of the forward pass: ``model(**batch.model_inputs())``."""
        return {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "position_ids": self.position_ids,
        }

    def completion_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """The logits ``[b, T, V]`` that predict the completion tokens, from ``[b, P + T, V]``."""
        p, t = self.prompt_width, self.targets.shape[1]
        return logits[:, p - 1 : p - 1 + t]


def collate_prompt_completions(
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    *,
    pad_id: int,
    width: int | None = None,
    device: torch.device | str | None = None,
) -> PromptCompletionBatch:
    """Row ``k`` holds ``prompts[k]`` left-padded to ``P`` then ``completions[k]`` right-padded.

    ``P`` is the longest prompt (each needs at least one token), ``T`` is ``width`` (``None``: the
    longest completion; longer completions are cut). Every completion starts at column ``P``.

    >>> b = collate_prompt_completions([[1, 2], [3]], [[7], [8, 9]], pad_id=0)
    >>> b.input_ids.tolist(), b.attention_mask.tolist()
    ([[1, 2, 7, 0], [0, 3, 8, 9]], [[1, 1, 1, 0], [0, 1, 1, 1]])
    >>> b.position_ids.tolist(), b.targets.tolist(), b.completion_mask.tolist(), b.prompt_width
    ([[0, 1, 2, 2], [0, 0, 1, 2]], [[7, 0], [8, 9]], [[1.0, 0.0], [1.0, 1.0]], 2)
    """
    if len(prompts) != len(completions):
        raise ValueError(
            f"{len(prompts)} prompts but {len(completions)} completions: give one prompt per "
            "completion"
        )
    empty = [k for k, p in enumerate(prompts) if len(p) == 0]
    if empty:
        raise ValueError(f"prompt rows {empty} are empty: every prompt needs at least one token")
    p_ids, p_mask = pad_batch(prompts, pad_id=pad_id, side="left", device=device)  # [b, P]
    c_ids, c_mask = pad_batch(
        completions, pad_id=pad_id, side="right", width=width, device=p_ids.device
    )  # [b, T]
    attention = torch.cat([p_mask, c_mask], dim=1)  # [b, P+T]
    return PromptCompletionBatch(
        input_ids=torch.cat([p_ids, c_ids], dim=1),  # [b, P+T]
        attention_mask=attention,
        position_ids=position_ids(attention),  # [b, P+T]
        targets=c_ids,  # [b, T]
        completion_mask=c_mask.float(),  # [b, T]
        prompt_width=p_ids.shape[1],
    )


def has_learned_positions(model: Any) -> bool:
    """Whether ``model`` adds a learned table of absolute positions (GPT-2's ``wpe``), so that
    its output depends on where a left-padded row starts (rotary families only see offsets)."""
    base = getattr(model, "base_model", model)
    return isinstance(getattr(base, "wpe", None), torch.nn.Embedding)


def _fill_position_ids(
    module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Forward pre-hook: ``position_ids`` from the attention mask when the caller gave none and
    the pass covers the whole mask (no KV cache: generation passes its own positions)."""
    mask = kwargs.get("attention_mask")
    ids = kwargs.get("input_ids", args[0] if args else None)
    if (
        kwargs.get("position_ids") is None
        and isinstance(mask, torch.Tensor)
        and isinstance(ids, torch.Tensor)
        and mask.dim() == 2
        and ids.shape == mask.shape
        and kwargs.get("past_key_values") is None
    ):
        kwargs = {**kwargs, "position_ids": position_ids(mask)}
    return args, kwargs


def count_positions_over_tokens(model: Any) -> bool:
    """Make forward passes without ``position_ids`` count positions over real tokens, as
    ``collate_prompt_completions`` and ``generate`` do, for a model with learned absolute
    positions (``has_learned_positions``); a no-op for others. Returns whether a hook was added.

    Why: callers that pass only ``input_ids`` and ``attention_mask`` (TRL's log-prob pass) give
    a GPT-2 left-padded prompts positions counted from the padding, so the log-probs it trains on
    differ from those of the completions it sampled. Idempotent.
    """
    if not has_learned_positions(model) or getattr(model, "_adaroll_positions", False):
        return False
    model.register_forward_pre_hook(_fill_position_ids, with_kwargs=True)
    model._adaroll_positions = True
    return True
