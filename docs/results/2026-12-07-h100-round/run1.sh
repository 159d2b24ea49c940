#!/usr/bin/env bash
# Device call 1 of 2026-12-07: (a) the two GPU-only zoo cases whose specs moved to parts (issue 34:
# atomic_order's kl.Repetition at rung 5, splitk_semaphore_graph's kl.Modes(graphs=True) at rung 4),
# buggy and fixed, climbed on CUDA; (b) where the rmsnorm twin's cold climb spends its time (issue 32's
# cold <= 20 s): a cold climb, then rung by rung with warm compile caches and a fresh store, then the
# per-point seconds from the JSON.
# run from the repository root: OUT=DIR bash docs/results/2026-12-07-h100-round/run1.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
ATOMIC_S=70 SPLITK_S=60
source docs/results/2026-12-07-h100-round/climbs.sh
export TRITON_CACHE_DIR=/tmp/tc-cold TORCHINDUCTOR_CACHE_DIR=/tmp/ic-cold KLADDER_HISTORY=/tmp/h-cold.db
rm -rf /tmp/tc-cold /tmp/ic-cold /tmp/h-cold.db
T=src/kladder/zoo/rmsnorm_n_tail.py::fixed
step twin_cold 100 $K climb $T --device cuda --fresh --json "$OUT/twin_cold.json"
rm -rf /tmp/tc-cold
step twin_cold_rs1 100 $K climb $T --device cuda --fresh --repeat-s 1 --json "$OUT/twin_cold_rs1.json"
step twin_warm_r1 50 $K climb $T --device cuda --fresh --rungs 1 --json "$OUT/twin_warm_r1.json"
rm -rf /tmp/tc-cold
step twin_cold_r1 50 $K climb $T --device cuda --fresh --rungs 1 --json "$OUT/twin_cold_r1.json"
python3 docs/results/2026-12-07-h100-round/seconds.py "$OUT" > "$OUT/seconds.txt" 2>&1
cat "$OUT/seconds.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
