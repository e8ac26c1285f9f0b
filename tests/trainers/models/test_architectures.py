"""trainers.models.architectures: four families from one builder, and left padding, positions and
log-probs right in every one (the trainer's collate, the HF engine, a caller passing no
positions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from trainers.engines import SamplingSpec
from trainers.engines.hf import HFEngine
from trainers.grpo import per_token_logps
from trainers.models.architectures import (
    ARCHITECTURES,
    ModelSize,
    build_model,
    model_config,
    parameter_count,
)
from trainers.models.collate import (
    collate_prompt_completions,
    count_positions_over_tokens,
    has_learned_positions,
)
from trainers.models.dropout import DROPOUT_ATTRIBUTES, has_dropout
from trainers.models.loading import load_policy, state_dict_as_saved
from trainers.models.tiny import TinyConfig, build_tiny_model, build_tiny_tokenizer

SMALL = ModelSize(hidden_size=128, num_layers=2, context=48)
#: the class, the config's name for the context, and whether the embeddings are tied
FAMILY = {
    "llama": ("LlamaForCausalLM", "max_position_embeddings", True),
    "qwen3": ("Qwen3ForCausalLM", "max_position_embeddings", True),
    "gpt_neox": ("GPTNeoXForCausalLM", "max_position_embeddings", False),
    "gpt2": ("GPT2LMHeadModel", "n_positions", True),
}
#: parameters at the default size (width 256, four layers, context 256, 100 tokens)
DEFAULT_PARAMETERS = {"llama": 3_140_864, "qwen3": 3_141_376, "gpt_neox": 3_210_752,
                      "gpt2": 3_250_688}  # fmt: skip


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each family at ``SMALL``, saved with its tokenizer (what ``load_policy`` reads)."""
    out = {}
    for arch in ARCHITECTURES:
        tok = build_tiny_tokenizer(model_max_length=SMALL.context)
        directory = tmp_path_factory.mktemp(arch)
        build_model(arch, SMALL, seed=3, tokenizer=tok).save_pretrained(directory)
        tok.save_pretrained(directory)
        out[arch] = directory
    return out


# -- building -------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_family_builds_small_dropout_free_float32_with_heads_of_64(arch: str) -> None:
    tok = build_tiny_tokenizer(model_max_length=SMALL.context)
    model = build_model(arch, SMALL, seed=0, tokenizer=tok)
    cls, context_name, tied = FAMILY[arch]
    cfg = model.config
    assert type(model).__name__ == cls
    assert getattr(cfg, context_name) == SMALL.context == 48
    assert cfg.hidden_size // cfg.num_attention_heads == 64 and cfg.num_attention_heads == 2
    assert cfg.vocab_size == len(tok) == 100
    assert (cfg.pad_token_id, cfg.bos_token_id, cfg.eos_token_id) == (0, 1, 2)
    assert model.generation_config.pad_token_id == 0
    assert not has_dropout(model)
    assert all(getattr(cfg, name, 0) in (0, None) for name in DROPOUT_ATTRIBUTES)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    same = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert same == tied
    assert has_learned_positions(model) == (arch == "gpt2")


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_default_size_holds_about_three_million_parameters(arch: str) -> None:
    model = build_model(arch)
    assert parameter_count(model) == DEFAULT_PARAMETERS[arch]
    assert model.config.num_hidden_layers == 4 and model.config.hidden_size == 256


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_building_is_deterministic_and_leaves_the_callers_random_state(arch: str) -> None:
    torch.manual_seed(11)
    expected = torch.rand(2)
    torch.manual_seed(11)
    a = build_model(arch, SMALL, seed=5)
    assert torch.equal(torch.rand(2), expected)
    b, c = build_model(arch, SMALL, seed=5), build_model(arch, SMALL, seed=6)
    pairs = list(zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    assert all(torch.equal(x, y) for x, y in pairs)
    assert not torch.equal(a.get_input_embeddings().weight, c.get_input_embeddings().weight)


def test_the_llama_case_is_the_tiny_model() -> None:
    size = ModelSize(hidden_size=128, num_layers=2, intermediate_size=256, context=64)
    assert size.tiny_config() == TinyConfig()
    a, b = build_model("llama", size, seed=2), build_tiny_model(TinyConfig(), seed=2)
    assert a.config.to_dict() == b.config.to_dict()
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)


def test_mlp_widths_and_bad_shapes_are_refused_with_the_fix() -> None:
    size = ModelSize(hidden_size=192)
    assert [size.mlp_width(a) for a in ARCHITECTURES] == [512, 512, 768, 768]
    assert ModelSize(intermediate_size=100).mlp_width("gpt2") == 100
    with pytest.raises(ValueError) as exc:
        build_model("bert")
    assert str(exc.value) == (
        "unknown architecture 'bert'. Known: gpt2, gpt_neox, llama, qwen3. "
        "Pass one of them as arch."
    )
    with pytest.raises(ValueError, match="Did you mean 'gpt_neox'"):
        model_config("gpt-neox", SMALL, build_tiny_tokenizer())
    with pytest.raises(ValueError, match=r"hidden_size \(160\) is not a multiple of the head size"):
        ModelSize(hidden_size=160)
    with pytest.raises(ValueError, match="num_layers"):
        ModelSize(num_layers=0)
    with pytest.raises(ValueError, match="rope_theta"):
        ModelSize(rope_theta=0.0)


def test_the_tokenizer_follows_the_context() -> None:
    assert build_tiny_tokenizer().model_max_length == 64  # the tiny model's
    assert build_tiny_tokenizer(model_max_length=384).model_max_length == 384


# -- loading, positions and log-probs -------------------------------------------------------

PROMPTS = ["12+34=", "5+5=", "987-65="]
COMPLETIONS = ["46", "10", "922"]


def _rows(tok: Any) -> tuple[list[list[int]], list[list[int]]]:
    prompts = [tok(p).input_ids for p in PROMPTS]
    comps = [[*tok(c, add_special_tokens=False).input_ids, tok.eos_token_id] for c in COMPLETIONS]
    return prompts, comps


def _alone(model: Any, prompt: list[int], completion: list[int]) -> torch.Tensor:
    """Log-probs of ``completion`` after ``prompt`` in a batch of one (no padding)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + completion]), use_cache=False).logits
    return per_token_logps(logits[:, len(prompt) - 1 : -1], torch.tensor([completion]))[0]


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_load_policy_reads_every_family(saved: dict[str, Path], arch: str) -> None:
    model, tok = load_policy(str(saved[arch]))
    assert type(model).__name__ == FAMILY[arch][0] and not has_dropout(model)
    assert tok.padding_side == "left" and tok.model_max_length == SMALL.context
    again = build_model(arch, SMALL, seed=3)
    for k, v in again.state_dict().items():
        assert torch.equal(model.state_dict()[k], v), k
    # the names saved on disk (vLLM's weight sync reads them): GPT-NeoX's head is embed_out
    on_disk = load_file(str(saved[arch] / "model.safetensors"))
    as_saved = state_dict_as_saved(model)
    assert set(on_disk) <= set(as_saved) and set(as_saved) - set(on_disk) <= {"lm_head.weight"}
    assert all(torch.equal(as_saved[k], v) for k, v in on_disk.items())
    assert ("embed_out.weight" in on_disk) == (arch == "gpt_neox")


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_left_padding_changes_no_logprob(saved: dict[str, Path], arch: str) -> None:
    """The trainer's collate (explicit positions) and a caller that passes only the attention
    mask (TRL's log-prob pass) give each row of a left-padded batch its log-probs alone."""
    model, tok = load_policy(str(saved[arch]))
    prompts, comps = _rows(tok)
    batch = collate_prompt_completions(prompts, comps, pad_id=tok.pad_token_id)
    assert batch.attention_mask[:, 0].tolist() == [0, 0, 1]  # the two short prompts are padded
    with torch.no_grad():
        explicit = model(**batch.model_inputs(), use_cache=False).logits
        mask_only = model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False
        ).logits
    for logits in (explicit, mask_only):
        lp = per_token_logps(batch.completion_logits(logits), batch.targets)  # [3, T]
        for k in range(3):
            n = len(comps[k])
            torch.testing.assert_close(lp[k, :n], _alone(model, prompts[k], comps[k]), atol=2e-5,
                                       rtol=0)  # fmt: skip
    # without load_policy's hook a GPT-2 counts positions from the padding: wrong log-probs
    bare = build_model(arch, SMALL, seed=3)
    with torch.no_grad():
        shifted = bare(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False
        ).logits
    lp = per_token_logps(batch.completion_logits(shifted), batch.targets)
    gap = (lp[0, :3] - _alone(bare, prompts[0], comps[0])).abs().max().item()
    assert (gap > 1e-3) == (arch == "gpt2")
    assert count_positions_over_tokens(bare) == (arch == "gpt2")
    assert not count_positions_over_tokens(bare)  # once is enough


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_hf_engine_generates_as_the_trainer_scores(saved: dict[str, Path], arch: str) -> None:
    """Greedy completions of a left-padded batch are those of each prompt alone, and the
    engine's log-probs of sampled completions are the trainer's recomputed ones."""
    model, tok = load_policy(str(saved[arch]))
    prompts, _ = _rows(tok)
    engine = HFEngine(model, tok, batch_size=8)
    greedy = SamplingSpec(max_new_tokens=5, temperature=0.0)
    together = engine.generate(prompts, [1, 1, 1], greedy, seed=0)
    for k, p in enumerate(prompts):
        alone = engine.generate([p], [1], greedy, seed=0)
        assert alone.completion_ids[0] == together.completion_ids[k]
        np.testing.assert_allclose(alone.logprobs[0], together.logprobs[k], atol=2e-5)
    gen = engine.generate(prompts, [3, 2, 3], SamplingSpec(max_new_tokens=5), seed=1)
    rows = [prompts[i] for i in gen.prompt_index]
    batch = collate_prompt_completions(rows, gen.completion_ids, pad_id=tok.pad_token_id)
    with torch.no_grad():
        logits = model(**batch.model_inputs(), use_cache=False).logits
    lp = per_token_logps(batch.completion_logits(logits), batch.targets)
    for j, c in enumerate(gen.completion_ids):
        np.testing.assert_allclose(lp[j, : len(c)].numpy(), gen.logprobs[j], atol=5e-5)
