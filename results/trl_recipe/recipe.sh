# The TRL recipe chosen on arithmetic's validation split (results/trl_recipe/README.md: 64
# prompts x 8 completions a step, lr 1e-4 constant, the dapo loss, rewards scaled per group, one
# generation per step), as adaroll compete options; the competitions inside TRL source it:
#   source results/trl_recipe/recipe.sh; ... compete --trainer trl "${TRL_RECIPE[@]}" ...
TRL_RECIPE=(--batch-size 64 --group-size 8 --lr 1e-4 --lr-schedule constant --loss-type dapo
            --scale-rewards group)
