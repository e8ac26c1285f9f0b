#!/bin/bash
# The spell half of "prior_filter as the TRL default" (README.md): spell.sh with the one new
# entrant alone (entrants_spell_prior_filter.yaml), so that only its two runs run. From the
# repository root, in .venv-trl114; rerun to resume.
ENTRANTS=results/attributed/belief_fit/entrants_spell_prior_filter.yaml \
  exec bash results/attributed/belief_fit/spell.sh "$@"
