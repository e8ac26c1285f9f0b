"""How a task's prompt text becomes the token ids a policy sees: plain, or in a chat template.

One place for every path that encodes prompts (the trainer's rollouts, held-out evaluation, the
live env), so they agree token for token:

- ``chat_template="auto"``: when the tokenizer has a chat template, the prompt is the
  conversation ``[{"role": "system", ...}, {"role": "user", "content": text}]`` (the system turn
  only with a ``system_prompt``), rendered with ``add_generation_prompt=True`` and tokenized
  without adding special tokens, exactly as TRL's ``GRPOTrainer`` does for conversational
  prompts (the template writes its own special tokens). Without a template it is ``"none"``.
- ``chat_template="none"``: the plain encoding ``tokenizer(text).input_ids``, special tokens as
  the tokenizer adds them (the ``tiny`` tokenizer prepends ``<s>``). A ``system_prompt`` is put
  before the text, followed by a blank line.

``PromptFormat`` holds the two settings for callers that encode many prompts; the functions
take them as keywords. Only the standard library is imported: the tokenizer does the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

ChatTemplate = Literal["auto", "none"]
CHAT_TEMPLATES: tuple[str, ...] = get_args(ChatTemplate)


def has_chat_template(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` carries a chat template."""
    return bool(getattr(tokenizer, "chat_template", None))


def prompt_messages(text: str, *, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The conversation a prompt stands for: an optional system turn, then the user's text.

    >>> prompt_messages("2+2=", system_prompt="Answer with a number.")
    [{'role': 'system', 'content': 'Answer with a number.'}, {'role': 'user', 'content': '2+2='}]
    """
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": text}]


@dataclass(frozen=True)
class PromptFormat:
    """How prompts are encoded: ``chat_template`` (``"auto"`` or ``"none"``) and an optional
    ``system_prompt`` (empty is none). See the module docstring for both paths.

    >>> PromptFormat(chat_template="none").render(None, "2+2=")
    '2+2='
    """

    chat_template: ChatTemplate = "auto"
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        if self.chat_template not in CHAT_TEMPLATES:
            from adaroll_env.errors import unknown_name  # only on this error path

            raise unknown_name(
                "chat_template",
                str(self.chat_template),
                CHAT_TEMPLATES,
                "'auto' applies the tokenizer's template when it has one; 'none' never does.",
            )
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise TypeError(
                f"system_prompt must be a string or None, got {type(self.system_prompt).__name__}"
                f" ({self.system_prompt!r})"
            )

    def uses_template(self, tokenizer: Any) -> bool:
        """Whether prompts for ``tokenizer`` go through its chat template."""
        return self.chat_template == "auto" and has_chat_template(tokenizer)

    def render(self, tokenizer: Any, text: str) -> str:
        """The prompt as text: the rendered conversation, or the plain text (system prompt
        first). Plain text is encoded with the tokenizer's special tokens; a rendered
        conversation already holds them."""
        if self.uses_template(tokenizer):
            rendered = tokenizer.apply_chat_template(
                prompt_messages(text, system_prompt=self.system_prompt),
                add_generation_prompt=True,
                tokenize=False,
            )
            return str(rendered)
        return f"{self.system_prompt}\n\n{text}" if self.system_prompt else text

    def encode(self, tokenizer: Any, text: str) -> list[int]:
        """The prompt's token ids (see ``encode_prompt``)."""
        if self.uses_template(tokenizer):
            out = tokenizer.apply_chat_template(
                prompt_messages(text, system_prompt=self.system_prompt),
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )
            return [int(i) for i in out["input_ids"]]
        return [int(i) for i in tokenizer(self.render(tokenizer, text)).input_ids]


def encode_prompt(
    tokenizer: Any,
    text: str,
    *,
    chat_template: ChatTemplate = "auto",
    system_prompt: str | None = None,
) -> list[int]:
    """Token ids of a prompt: in the tokenizer's chat template (``"auto"``, when it has one),
    else the plain ``tokenizer(text).input_ids``.

    With a template this equals TRL's encoding of the conversational prompt
    ``prompt_messages(text, system_prompt=...)``; without one (the ``tiny`` model) it is what the
    trainer has always used.
    """
    fmt = PromptFormat(chat_template=chat_template, system_prompt=system_prompt)
    return fmt.encode(tokenizer, text)


def render_prompt(
    tokenizer: Any,
    text: str,
    *,
    chat_template: ChatTemplate = "auto",
    system_prompt: str | None = None,
) -> str:
    """The text that ``encode_prompt`` encodes (for logs and for TRL-style text datasets)."""
    fmt = PromptFormat(chat_template=chat_template, system_prompt=system_prompt)
    return fmt.render(tokenizer, text)


def encode_prompts(
    tokenizer: Any,
    texts: Sequence[str],
    *,
    chat_template: ChatTemplate = "auto",
    system_prompt: str | None = None,
) -> list[list[int]]:
    """``encode_prompt`` of each text, in order."""
    fmt = PromptFormat(chat_template=chat_template, system_prompt=system_prompt)
    return [fmt.encode(tokenizer, t) for t in texts]
