"""A plug-in allocator for the competition's watchdog test: uniform until its third decision in
a process, then stuck for good (a sleep that a stop signal does not end)."""

from __future__ import annotations

import time

from agents.baselines import UniformAllocator


class StuckAllocator(UniformAllocator):
    """Uniform, then stuck forever at the third decision of its process."""

    name = "stuck"
    decisions = 0

    def allocate(self, obs):
        type(self).decisions += 1
        while type(self).decisions >= 3:
            time.sleep(3600)  # a signal's handler returns and the sleep goes on
        return super().allocate(obs)
