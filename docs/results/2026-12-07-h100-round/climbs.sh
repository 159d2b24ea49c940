# sourced by run1.sh, run2.sh and run3.sh (after common.sh): the two GPU-only zoo cases whose specs moved to
# parts (issue 34: atomic_order's kl.Repetition at rung 5, splitk_semaphore_graph's kl.Modes(graphs=True) at
# rung 4), buggy and fixed, climbed on CUDA; ATOMIC_S / SPLITK_S: each climb's time limit
K="python3 -m kladder"
for which in buggy fixed; do
  fixed=$([ $which = fixed ] && echo --fixed)
  step atomic_$which "${ATOMIC_S:-60}" $K zoo climb atomic_order $fixed --device cuda --rungs 5 --no-history --json "$OUT/atomic_$which.json"
done
for which in buggy fixed; do
  fixed=$([ $which = fixed ] && echo --fixed)
  step splitk_$which "${SPLITK_S:-45}" $K zoo climb splitk_semaphore_graph $fixed --device cuda --rungs 4 --no-history --json "$OUT/splitk_$which.json"
done
