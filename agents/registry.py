"""Allocator registry: names, ``"module:Class"`` specs and the ``adaroll.allocators`` group."""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from adaroll_env.errors import closest, import_object, unknown_name
from adaroll_env.model import AllocationParams
from agents.base import Allocator

ENTRY_POINT_GROUP = "adaroll.allocators"

#: name -> factory, or "module:attr" string imported on first use (keeps ``import agents`` light).
_REGISTRY: dict[str, Callable[..., Any] | str] = {}

_REQUIRED = ("reset", "allocate", "act", "predict")


def register_allocator(
    name: str, factory: Callable[..., Any] | str, *, overwrite: bool = False
) -> None:
    """Register ``factory`` (a class, a callable taking keyword arguments, or a
    ``"module:attr"`` path imported on first use) under ``name``.
    """
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(
            f"allocator name {name!r} must be a non-empty string without ':' "
            "(':' marks 'module:Class' specs and the reserved 'sb3:' prefix)"
        )
    if name in _REGISTRY and not overwrite:
        raise ValueError(
            f"allocator {name!r} is already registered: pass overwrite=True to replace it"
        )
    if not (callable(factory) or isinstance(factory, str)):
        raise TypeError(f"factory for {name!r} must be callable or a 'module:attr' string")
    _REGISTRY[name] = factory


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


#: the environment variable giving plug-ins short names: ``name=module:Class`` pairs, comma- or
#: whitespace-separated (e.g. ``ADAROLL_ALLOCATORS="mine=mymod:Mine,hot=pkg.alloc:Hot"``)
ALIASES_ENV = "ADAROLL_ALLOCATORS"


def env_aliases() -> dict[str, str]:
    """The short names ``ADAROLL_ALLOCATORS`` maps to ``module:Class`` specs (checked: each
    item ``name=module:Class``, the name not a registered one)."""
    text = os.environ.get(ALIASES_ENV, "").strip()
    out: dict[str, str] = {}
    for item in text.replace(",", " ").split():
        name, sep, target = item.partition("=")
        name, target = name.strip(), target.strip()
        if not sep or not name or ":" not in target or ":" in name:
            raise ValueError(
                f"{ALIASES_ENV} item {item!r} must be name=module:Class (e.g. "
                f"{ALIASES_ENV}='mine=mymod:Mine'), comma-separated"
            )
        if name in _REGISTRY:
            raise ValueError(
                f"{ALIASES_ENV} names {name!r}, which is a registered allocator: choose another "
                "name for 'module:Class' " + repr(target)
            )
        out[name] = target
    return out


def list_allocators() -> list[str]:
    """Registered names plus those of the ``adaroll.allocators`` entry-point group and of
    ``ADAROLL_ALLOCATORS``."""
    return sorted(set(_REGISTRY) | set(_entry_points()) | set(env_aliases()))


def display_name(spec: str) -> str:
    """The name tables show for ``spec``: a ``module:Class`` plug-in's own ``name`` attribute
    when it sets one, else the spec."""
    spec = spec.strip()
    if ":" not in spec or spec.startswith("sb3:"):
        return spec
    try:
        name = getattr(_factory(spec), "name", None)
    except (ValueError, ImportError):
        return spec
    return name if isinstance(name, str) and name.strip() and name != "base" else spec


def known_allocators() -> list[str]:
    """Every spec a user can name without a path: ``list_allocators()`` and ``sb3:pretrained``
    (the shipped learned allocator; needs the ``sb3`` extra)."""
    return [*list_allocators(), "sb3:pretrained"]


def _add_working_directory() -> None:
    """Let ``module:Class`` specs import modules of the working directory, as ``python -m``
    does, also under the ``adaroll`` console script (whose ``sys.path`` lacks the directory).
    Appended, so an installed package of the same name still wins."""
    cwd = os.getcwd()
    if not any(p in ("", ".", cwd) for p in sys.path):
        sys.path.append(cwd)


def _factory(spec: str) -> Callable[..., Any]:
    if spec.startswith("sb3:"):
        # Lazy: torch and SB3 load only when a learned allocator is asked for.
        import functools

        from agents.sb3.allocator import load_sb3_allocator

        return functools.partial(load_sb3_allocator, spec[len("sb3:") :])
    if spec in _REGISTRY:
        found = _REGISTRY[spec]
        return import_object(found, "allocator") if isinstance(found, str) else found
    if ":" in spec:
        _add_working_directory()
        return import_object(spec, "allocator")  # type: ignore[no-any-return]
    aliases = env_aliases()
    if spec in aliases:
        _add_working_directory()
        return import_object(aliases[spec], "allocator")  # type: ignore[no-any-return]
    eps = _entry_points()
    if spec in eps:
        return eps[spec].load()  # type: ignore[no-any-return]
    raise unknown_name(
        "allocator",
        spec,
        known_allocators(),
        "Or give your own as 'package.module:Class' or register it with register_allocator().",
    )


def is_adaptive(spec: str) -> bool:
    """Whether allocator ``spec`` may react to outcomes within an episode (its class's
    ``adaptive`` flag; True when unknown). Learned ``sb3:`` allocators count as adaptive."""
    if spec.strip().startswith("sb3:"):
        return True
    return bool(getattr(_factory(spec.strip()), "adaptive", True))


def is_one_round(allocator: Any) -> bool:
    """Whether ``allocator`` (a spec or an instance) asks for one round a step under the
    trainers' default rounds (its class's ``one_round``; False for learned ``sb3:`` specs, for
    None and for unknown specs, whose error is for the allocator's own construction to raise)."""
    if allocator is None:
        return False
    if isinstance(allocator, str):
        if allocator.strip().startswith("sb3:"):
            return False
        try:
            factory = _factory(allocator.strip())
        except (KeyError, ValueError, ImportError, AttributeError):
            return False
        return bool(getattr(factory, "one_round", False))
    return bool(getattr(allocator, "one_round", False))


def default_pilot(spec: str) -> int:
    """The pilot allocator ``spec`` asks of a trainer whose ``pilot`` is unset (its class's
    ``default_pilot``; 0 for learned ``sb3:`` allocators and classes without the attribute)."""
    if spec.strip().startswith("sb3:"):
        return 0
    return int(getattr(_factory(spec.strip()), "default_pilot", 0))


def allocator_parameters(spec: str) -> list[str] | None:
    """The keyword arguments allocator ``spec``'s constructor takes (None: any keyword)."""
    factory = _factory(spec.strip())
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins and C callables: nothing to check against
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.append(p.name)
    return names


def check_allocator_kwargs(spec: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Return ``kwargs`` if allocator ``spec``'s constructor takes every one of them.

    An unknown keyword raises ``ValueError`` naming the allocator's real parameters and the
    closest one (the constructor's own ``TypeError`` would only name the keyword).
    """
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ValueError(
            f"allocator keyword arguments must be an object of name: value pairs, got {kwargs!r}"
        )
    known = allocator_parameters(spec)
    if known is None:
        return kwargs
    for key in kwargs:
        if key not in known:
            guess = closest(key, known)
            hint = f" Did you mean {guess!r}?" if guess else ""
            listed = ", ".join(known) if known else "none"
            raise ValueError(
                f"allocator {spec!r} has no parameter {key!r}.{hint} Its parameters: {listed}."
            )
    return kwargs


def parse_allocator_kwargs(spec: str, text: str) -> dict[str, Any]:
    """Parse ``--allocator-kwargs`` (a JSON object, ``""`` or ``"{}"`` for none) for allocator
    ``spec`` and check every keyword against its constructor (``check_allocator_kwargs``)."""
    kwargs = _json_object(text, "--allocator-kwargs", "'{\"max_horizon\": 8}'")
    return check_allocator_kwargs(spec, kwargs)


def _json_object(text: str, what: str, example: str) -> dict[str, Any]:
    if not str(text).strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{what} {text!r} is not valid JSON ({exc}): write e.g. {example}"
        ) from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} {text!r} must be a JSON object, e.g. {example}")
    return value


def parse_allocator_kwargs_by_spec(specs: list[str], text: str) -> dict[str, dict[str, Any]]:
    """Parse ``adaroll bench --allocator-kwargs``: a JSON object from allocator spec to its
    keyword arguments, e.g. ``{"thompson": {"max_horizon": 8}}``; every spec must be one of
    ``specs`` and every keyword a parameter of its constructor."""
    example = '\'{"thompson": {"max_horizon": 8}}\''
    by_spec = _json_object(text, "--allocator-kwargs", example)
    out = {}
    for spec, kwargs in by_spec.items():
        if spec not in specs:
            guess = closest(spec, specs)
            hint = f" Did you mean {guess!r}?" if guess else ""
            raise ValueError(
                f"--allocator-kwargs names allocator {spec!r}, which is not in --allocators "
                f"({', '.join(specs)}).{hint} Its keys are allocator specs, e.g. {example}"
            )
        if not isinstance(kwargs, dict):
            raise ValueError(
                f"--allocator-kwargs for {spec!r} must be a JSON object of keyword arguments, "
                f"got {kwargs!r}: write e.g. {example}"
            )
        out[spec] = check_allocator_kwargs(spec, kwargs)
    return out


def check_protocol(obj: Any, spec: str) -> None:
    """Raise TypeError naming what ``obj`` lacks of the ``Allocator`` protocol."""
    missing = [m for m in _REQUIRED if not callable(getattr(obj, m, None))]
    if not isinstance(getattr(obj, "name", None), str):
        missing.append("name (a str attribute)")
    if missing:
        raise TypeError(
            f"allocator {spec!r} ({type(obj).__name__}) does not meet the Allocator protocol: "
            f"missing {', '.join(missing)}. Subclass agents.BaseAllocator (it provides reset, act "
            "and predict) and write allocate(obs) -> integer counts"
        )


def params_of(params_or_env: AllocationParams | gym.Env) -> AllocationParams:
    """``AllocationParams`` given directly or read from ``env.unwrapped.params``."""
    if isinstance(params_or_env, AllocationParams):
        return params_or_env
    params = getattr(getattr(params_or_env, "unwrapped", None), "params", None)
    if isinstance(params, AllocationParams):
        return params
    raise TypeError(
        f"expected AllocationParams or an adaroll env, got {type(params_or_env).__name__}: "
        "pass env or env.unwrapped.params"
    )


def make_allocator(
    spec: str,
    params_or_env: AllocationParams | gym.Env,
    seed: int | None = None,
    **kwargs: Any,
) -> Allocator:
    """Build the allocator ``spec`` with ``**kwargs`` (keyword arguments only), then
    ``reset(params, seed=seed)`` it.

    ``spec``: a registered name (``list_allocators()``), ``"package.module:ClassName"``, an
    entry point of the group ``adaroll.allocators``, or ``"sb3:<path>"`` — a model saved by
    ``adaroll train-sb3`` (``"sb3:pretrained"``: the shipped one). SB3 zips are pickles: load
    only trusted files.
    """
    if not isinstance(spec, str):
        raise TypeError(f"allocator spec must be a string, got {type(spec).__name__}")
    spec = spec.strip()
    params = params_of(params_or_env)
    factory = _factory(spec)
    if not callable(factory):
        raise TypeError(f"allocator spec {spec!r} resolves to {factory!r}, which is not callable")
    try:
        check_allocator_kwargs(spec, kwargs)
    except ValueError as exc:  # TypeError, as calling the constructor would raise
        raise TypeError(f"cannot build allocator {spec!r} with {kwargs}: {exc}") from None
    try:
        obj = factory(**kwargs)
    except TypeError as exc:
        raise TypeError(f"cannot build allocator {spec!r} with {kwargs}: {exc}") from exc
    check_protocol(obj, spec)
    obj.reset(params, seed=seed)
    return obj  # type: ignore[no-any-return]
