"""Prompt encoding (plain and chat template) and a real architecture on the plain path.

The "real" model is the suite's ``chat_model_dir`` (``tests/conftest.py``): a random-init
Qwen2-architecture causal LM with a byte-level BPE tokenizer trained on a few strings and given
a ChatML chat template; nothing is downloaded.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainers.engines.base import SamplingSpec
from trainers.engines.hf import HFEngine
from trainers.grpo import per_token_logps
from trainers.models.collate import collate_prompt_completions
from trainers.models.loading import build_tiny_tokenizer, load_policy
from trainers.models.prompts import (
    PromptFormat,
    encode_prompt,
    encode_prompts,
    has_chat_template,
    prompt_messages,
    render_prompt,
)

# -- plain path (the tiny model has no chat template) ---------------------------------------


def test_plain_encoding_is_the_trainers_for_the_tiny_tokenizer():
    tok = build_tiny_tokenizer()
    assert not has_chat_template(tok)
    for text in ("37+5=", "12*34=", "a word problem?"):
        expected = tok(text).input_ids  # what the trainer has always fed the policy
        assert expected[0] == tok.bos_token_id
        assert encode_prompt(tok, text) == expected  # auto falls back to plain
        assert encode_prompt(tok, text, chat_template="none") == expected
    assert encode_prompts(tok, ["1+1=", "2+2="]) == [tok("1+1=").input_ids, tok("2+2=").input_ids]


def test_a_system_prompt_without_a_template_goes_first_as_text():
    tok = build_tiny_tokenizer()
    assert render_prompt(tok, "2+2=", system_prompt="Add.") == "Add.\n\n2+2="
    assert encode_prompt(tok, "2+2=", system_prompt="Add.") == tok("Add.\n\n2+2=").input_ids
    assert render_prompt(tok, "2+2=", system_prompt="") == "2+2="  # empty is none


# -- chat template --------------------------------------------------------------------------


def test_auto_applies_the_chat_template_with_a_system_turn(chat_model_dir):
    _, tok = load_policy(str(chat_model_dir))
    assert has_chat_template(tok)  # survives save_pretrained / load_policy
    text, system = "What is 37 + 5?", "Answer with a number."
    by_hand = (
        "<|im_start|>system\nAnswer with a number.<|im_end|>\n"
        "<|im_start|>user\nWhat is 37 + 5?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_prompt(tok, text, system_prompt=system) == by_hand
    ids = encode_prompt(tok, text, system_prompt=system)
    # the template writes the special tokens itself: nothing else is added
    assert ids == tok(by_hand, add_special_tokens=False).input_ids
    start = tok.convert_tokens_to_ids("<|im_start|>")
    assert ids[0] == start and ids.count(start) == 3
    assert tok.decode(ids) == by_hand
    no_system = encode_prompt(tok, text)
    assert no_system.count(start) == 2 and tok.decode(no_system).startswith("<|im_start|>user\n")
    # 'none' ignores the template: plain text, as the trainer encoded before
    assert encode_prompt(tok, text, chat_template="none") == tok(text).input_ids
    assert start not in encode_prompt(tok, text, chat_template="none")


def test_the_chat_template_path_matches_trl(chat_model_dir):
    data_utils = pytest.importorskip("trl.data_utils")
    _, tok = load_policy(str(chat_model_dir))
    messages = prompt_messages("What is 37 + 5?", system_prompt="Be brief.")
    theirs = data_utils.apply_chat_template({"prompt": messages}, tok)["prompt"]
    assert render_prompt(tok, "What is 37 + 5?", system_prompt="Be brief.") == theirs
    # TRL's GRPOTrainer tokenizes conversational prompts through the template the same way
    trl_ids = tok.apply_chat_template(
        conversation=[messages], add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"][0]
    assert encode_prompt(tok, "What is 37 + 5?", system_prompt="Be brief.") == list(trl_ids)


def test_prompt_format_validates_its_settings():
    with pytest.raises(ValueError, match=r"unknown chat_template 'chatml'.*Known: auto, none"):
        PromptFormat(chat_template="chatml")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Did you mean 'auto'"):
        encode_prompt(build_tiny_tokenizer(), "1+1=", chat_template="autp")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="system_prompt must be a string or None, got int"):
        PromptFormat(system_prompt=3)  # type: ignore[arg-type]


# -- a real architecture on the plain path --------------------------------------------------


def test_a_qwen2_model_loads_and_generates_ragged_through_the_hf_engine(chat_model_dir):
    model, tok = load_policy(str(chat_model_dir))
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert tok.padding_side == "left" and tok.pad_token == "<|endoftext|>"
    texts = ["What is 37 + 5?", "Natalia sold clips.", "Think step by step: 7 * 8 = ?"]
    prompts = encode_prompts(tok, texts, system_prompt="Answer with a number.")
    assert len({len(p) for p in prompts}) == 3  # ragged prompts: left padding is exercised
    counts = [2, 0, 3]
    spec = SamplingSpec(max_new_tokens=6, temperature=1.0)
    engine = HFEngine(model, tok, batch_size=4)  # the chunks cut across prompts
    gen = engine.generate(prompts, counts, spec, seed=7)
    assert gen.prompt_index.tolist() == [0, 0, 2, 2, 2]
    assert len(gen.texts) == len(gen.logprobs) == 5
    for ids, lp, trunc in zip(gen.completion_ids, gen.logprobs, gen.truncated, strict=True):
        assert 1 <= len(ids) <= 6 and len(lp) == len(ids)
        assert bool(trunc) == (tok.eos_token_id not in ids)
        assert np.all(np.isfinite(lp)) and np.all(lp <= 0)
    again = engine.generate(prompts, counts, spec, seed=7)
    assert again.completion_ids == gen.completion_ids  # reproducible given the seed
    # The engine's log-probs are the policy's: recompute them with one padded forward pass.
    rows = gen.prompt_index.tolist()
    batch = collate_prompt_completions(
        [prompts[r] for r in rows], gen.completion_ids, pad_id=tok.pad_token_id
    )
    with torch.no_grad():
        logits = model(**batch.model_inputs(), use_cache=False).logits  # [b, P+T, V]
    picked = per_token_logps(batch.completion_logits(logits), batch.targets)  # [b, T]
    for k, lp in enumerate(gen.logprobs):
        torch.testing.assert_close(picked[k, : len(lp)], torch.from_numpy(lp), atol=2e-4, rtol=2e-4)
