#!/bin/bash
# The spell half tabulated with every entrant that ran there (entrants_spell_ran.yaml): spell.sh
# restores them all from the evidence and runs nothing new. From the repository root.
ENTRANTS=results/attributed/belief_fit/entrants_spell_ran.yaml \
  exec bash results/attributed/belief_fit/spell.sh "$@"
