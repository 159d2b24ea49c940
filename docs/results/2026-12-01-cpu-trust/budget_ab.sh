#!/bin/bash
# interleaved: main's tree, then this branch's, for each zoo twin's rung-1 climb, twice
cd /tmp/trust/ab
for round in 1 2; do
for c in rmsnorm_n_tail nan_blind stale_state gemm_k_tail; do
  for tree in main trust; do
    src=/work/main/src; [ $tree = trust ] && src=/work/wt/trust/src
    s=$(date +%s.%N)
    PYTHONPATH=$src nice -n 10 python -m kladder.cli zoo climb $c --fixed --rungs 1 --device cpu --json $c.$tree.$round.json > $c.$tree.$round.txt 2>&1
    e=$(date +%s.%N)
    echo "$round $c $tree $(python3 -c "print(round($e-$s,1))") $(grep -E 'failed, .* passed' $c.$tree.$round.txt)" >> ab.txt
  done
done
done
echo done >> ab.txt
