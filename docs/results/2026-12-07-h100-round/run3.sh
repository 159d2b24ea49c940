#!/usr/bin/env bash
# Device call of 2026-12-07 (second session), cut to the device time the refusals left: run2.sh's four
# climbs (issue 34: the two GPU-only zoo cases whose specs moved to parts, buggy and fixed), then the
# rmsnorm twin's cold climb, every rung (issue 32: <= 20 s), with its slowest points from the JSON.
# run from the repository root: OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-round/run3.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
source docs/results/2026-12-07-h100-round/climbs.sh
export TRITON_CACHE_DIR=/tmp/tc-cold TORCHINDUCTOR_CACHE_DIR=/tmp/ic-cold KLADDER_HISTORY=/tmp/h-cold.db
rm -rf /tmp/tc-cold /tmp/ic-cold /tmp/h-cold.db
step twin_cold 100 $K climb src/kladder/zoo/rmsnorm_n_tail.py::fixed --device cuda --fresh --json "$OUT/twin_cold.json"
python3 docs/results/2026-12-07-h100-round/seconds.py "$OUT" > "$OUT/seconds.txt" 2>&1
cat "$OUT/seconds.txt" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
