"""The documented path of ``exact_value``; the code lives in ``agents.policy_value``."""

from __future__ import annotations

from agents.policy_value import TooManyStates, exact_value

__all__ = ["TooManyStates", "exact_value"]
