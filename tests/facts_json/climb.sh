#!/usr/bin/env bash
# Climb a handful of cheap zoo cases of different rungs with --json into DIR, using the kladder
# under SRC: `tests/facts_json/climb.sh /work/main/src /tmp/before`, then the same with this tree's
# src into /tmp/after, then `python tests/facts_json/compare.py /tmp/before /tmp/after`.
set -u
src=$1; out=$2; mkdir -p "$out"
while read -r case rung extra; do
  PYTHONPATH=$src timeout 600 python -c 'from kladder.tools.cli import main; main()' zoo climb "$case" --device cpu \
      --rungs "$rung" $extra --json "$out/$case-$rung.json" > "$out/$case-$rung.txt" 2>&1
  echo "$case $rung exit $?"
done <<'CASES'
rmsnorm_n_tail 1
bias_tile_index 2
assumes_contiguous 3
undeclared_mutation 4
stale_state 4
sampled_timing 5
flag_no_effect 7
wrong_path_dispatch 7
CASES
