"""Experiments in real training, and the statistics and plots they report.

Rooms (``trainers.experiments.``):

- ``compete``: ``adaroll compete``, entrants trained from the same warm start, data and seeds;
- ``entrants``: the entrants file (a configuration per entrant);
- ``statistics``: paired differences by seed, AUC, rollouts to a target;
- ``plots``: the competition's curves;
- ``trl_run`` (with ``trl_callback``): one TRL training writing a run directory, what
  ``adaroll compete --trainer trl`` runs per (entrant, seed);
- ``trl_compete``: the former TRL competition's options, mapped onto ``--trainer trl``;
- ``sim_to_real`` (with ``sim_to_real_report``): ``adaroll bench --from-run``, the simulator's
  prediction of a training run's figures against the live ones.
"""
