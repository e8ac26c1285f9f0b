"""The entrants of ``adaroll compete``: who competes, each with its own allocator and settings.

An entrant is a name (its run directory ``runs/<name>/seed<k>/`` and its table row), an allocator
spec, the allocator's keyword arguments and overrides of a few ``GRPOConfig`` fields
(``ENTRANT_SETTINGS``: the ones that shape allocation and beliefs, plus the optimisation recipe:
learning rate, loss normalisation, DAPO's dynamic sampling, advantage scaling, KL coefficient,
updates per generation and, with ``--trainer trl``, the learning-rate schedule and the steps per
generation batch, so that each entrant can run at its own best recipe and the step size can be
controlled; never the model, the task or the budget, which every entrant shares).
``load_entrants(path)`` reads a YAML (``.yaml``/``.yml``) or JSON file holding a list of them::

    - name: uniform
      allocator: uniform
    - name: bamdp-snr
      allocator: bamdp
      utility: snr(8)
      belief_prior: fitted
    - name: bamdp-384+128
      allocator: bamdp
      round_schedule: 384,128     # or [384, 128], or 0.75,0.25

An entrant's own round setting (``rounds``, ``round_size`` or ``round_schedule``) replaces the
shared ones. ``--allocators a,b`` is the short form: one entrant per spec, named by it, with no
overrides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adaroll_env.errors import closest

#: the ``GRPOConfig`` fields an entrant may set for itself
ENTRANT_SETTINGS: tuple[str, ...] = (
    "utility",
    "belief_prior",
    "belief_decay",
    "belief_fit",
    "belief_group",
    "prior_alpha",
    "prior_beta",
    "rounds",
    "round_size",
    "round_schedule",
    "pool_size",
    "pilot",
    "pilot_threshold",
    "max_group",
    "lr",
    "loss_type",
    "dynamic_sampling",
    "scale_rewards",
    "beta",
    "num_iterations",
    "lr_schedule",
    "steps_per_generation",
)
#: every key an entrant of a file may hold
ENTRANT_KEYS: tuple[str, ...] = ("name", "allocator", "allocator_kwargs", *ENTRANT_SETTINGS)
#: the ``GRPOConfig`` fields of ``ENTRANT_SETTINGS`` that hold floats (an integer is widened)
_FLOAT_SETTINGS = frozenset(
    {"belief_decay", "prior_alpha", "prior_beta", "lr", "beta", "pilot_threshold"}
)
#: the settings that size a step's rounds: an entrant's own one replaces the shared ones
ROUND_SETTINGS: tuple[str, ...] = ("rounds", "round_size", "round_schedule")


@dataclass(frozen=True)
class Entrant:
    """One competitor: ``name``, ``allocator`` spec, its keyword arguments and the
    ``GRPOConfig`` fields (of ``ENTRANT_SETTINGS``) it sets for itself."""

    name: str
    allocator: str
    allocator_kwargs: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def directory_name(self) -> str:
        """The name as a directory name (``:`` and ``/`` become ``_``)."""
        return self.name.replace(":", "_").replace("/", "_")


def entrants_from_allocators(
    specs: list[str], kwargs: Mapping[str, dict[str, Any]]
) -> list[Entrant]:
    """The entrants ``--allocators`` names: one per spec, named by it, with its keyword
    arguments from ``kwargs`` (spec -> arguments)."""
    return [Entrant(spec, spec, dict(kwargs.get(spec, {}))) for spec in specs]


def load_entrants(path: str | Path) -> list[Entrant]:
    """The entrants of a YAML or JSON file (a list of mappings); every user error is a
    ``ValueError`` naming the entrant, the key and the fix."""
    from trainers.models.paths import MissingPathError

    p = Path(path).expanduser()
    if not p.is_file():
        raise MissingPathError(
            f"entrants file {str(path)!r} does not exist: give a YAML or JSON file listing the "
            "entrants (docs/compete/entrants.yaml is an example)"
        )
    data = _parse(p)
    if not isinstance(data, list) or not data:
        raise ValueError(
            f"entrants file {p.name} must hold a non-empty list of entrants (each a mapping "
            f"with at least 'name' and 'allocator'), got {type(data).__name__}"
        )
    entrants = [_entrant(i, item) for i, item in enumerate(data)]
    check_unique(entrants)
    return entrants


def _parse(p: Path) -> Any:
    """The file's contents: YAML for ``.yaml``/``.yml``, JSON for ``.json``."""
    import json

    suffix = p.suffix.lower()
    if suffix == ".json":
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"entrants file {p.name} is not valid JSON: {exc.msg} at line {exc.lineno}"
            ) from None
    if suffix not in (".yaml", ".yml"):
        raise ValueError(
            f"entrants file {p.name} must end in .yaml, .yml or .json, got {suffix or 'none'!r}"
        )
    try:
        import yaml
    except ImportError:
        raise ValueError(
            'reading a YAML entrants file needs pyyaml: pip install -e ".[train]" (or give a '
            "JSON file)"
        ) from None
    try:
        return yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"entrants file {p.name} is not valid YAML: {exc}") from None


def _entrant(index: int, item: Any) -> Entrant:
    """Entrant ``index`` (0-based) of a file, its keys checked."""
    where = f"entrant {index + 1}"
    if not isinstance(item, dict):
        raise ValueError(
            f"{where} must be a mapping with at least 'name' and 'allocator', got {item!r}"
        )
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where} needs a 'name' (a non-empty string), got {name!r}")
    where = f"{where} ({name!r})"
    for key in item:
        if key not in ENTRANT_KEYS:
            guess = closest(str(key), ENTRANT_KEYS)
            hint = f" Did you mean {guess!r}?" if guess else ""
            raise ValueError(
                f"{where} has unknown key {key!r}.{hint} Allowed keys: "
                f"{', '.join(ENTRANT_KEYS)} (other settings are shared: give them as options "
                "of adaroll compete)"
            )
    if Entrant(name, "").directory_name.strip(".") == "":
        raise ValueError(f"{where}: the name {name!r} cannot name a directory; choose another")
    spec = item.get("allocator")
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{where} needs an 'allocator' (a spec such as 'bamdp'), got {spec!r}")
    kwargs = item.get("allocator_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise ValueError(
            f"{where}: allocator_kwargs must be a mapping of keyword arguments, got {kwargs!r}"
        )
    settings = {k: item[k] for k in ENTRANT_SETTINGS if k in item}
    for k in _FLOAT_SETTINGS & set(settings):
        if isinstance(settings[k], int) and not isinstance(settings[k], bool):
            settings[k] = float(settings[k])
        elif isinstance(settings[k], str):  # YAML reads 1e-4 (no dot) as a string
            try:
                settings[k] = float(settings[k])
            except ValueError:
                raise ValueError(f"{where}: {k} must be a number, got {settings[k]!r}") from None
    schedule = settings.get("round_schedule")
    if isinstance(schedule, list):  # [384, 128] in YAML/JSON: the spec "384,128"
        settings["round_schedule"] = ",".join(str(x) for x in schedule)
    elif schedule is not None and not isinstance(schedule, str):
        raise ValueError(
            f"{where}: round_schedule must be a spec such as '384,128' or '0.75,0.25', or a "
            f"list of round sizes, got {schedule!r}"
        )
    return Entrant(name.strip(), spec.strip(), dict(kwargs), settings)


def check_unique(entrants: list[Entrant]) -> None:
    """Refuse two entrants with one name, or names that share a run directory."""
    seen: dict[str, str] = {}
    for e in entrants:
        other = seen.get(e.directory_name)
        if other == e.name:
            raise ValueError(
                f"two entrants are named {e.name!r}: each entrant needs its own name (its run "
                "directory and table row)"
            )
        if other is not None:
            raise ValueError(
                f"entrants {other!r} and {e.name!r} share the run directory "
                f"runs/{e.directory_name}: rename one"
            )
        seen[e.directory_name] = e.name
