#!/usr/bin/env bash
# usage: golden_capture.sh SRC_ROOT OUTDIR : climbs with that tree's kladder; terminal text + JSON per climb
set -u
SRC=$1; OUT=$2; mkdir -p $OUT
export PYTHONPATH=$SRC/src
T=$SRC/tests/specs
cd $SRC/tests
k() { name=$1; shift; python -m kladder.cli "$@" --json $OUT/$name.json --log $OUT/$name.jsonl > $OUT/$name.txt 2> $OUT/$name.err; echo "$name exit=$?" >> $OUT/exits.txt; }
k faulty climb $T/faulty.py --device cpu --timeout 3 --rungs 1
k flaky climb $T/flaky.py --device cpu --rungs 1
k good climb $T/good.py --device cpu
k stateful climb $T/stateful.py --device cpu --rungs 1,4
k rmsnorm_n_tail zoo climb rmsnorm_n_tail --device cpu --rungs 1
k small_overrun zoo climb small_overrun --device cpu --rungs 1
k nan_blind zoo climb nan_blind --device cpu --rungs 1
k assumes_contiguous zoo climb assumes_contiguous --device cpu --rungs 3
k shared_kernel_reference zoo climb shared_kernel_reference --device cpu --rungs 3
k padding_scale_read zoo climb padding_scale_read --device cpu --rungs 3
k scale_layout_mismatch zoo climb scale_layout_mismatch --device cpu --rungs 3
k chunked_prefill_short zoo climb chunked_prefill_short --device cpu --rungs 2
k router_tie_pack zoo climb router_tie_pack --device cpu --rungs 2
k stale_state zoo climb stale_state --device cpu --rungs 4
k plan_cache_restart zoo climb plan_cache_restart --device cpu --rungs 4
k undeclared_mutation zoo climb undeclared_mutation --device cpu --rungs 4
k wrong_stream zoo climb wrong_stream --device cpu --rungs 4
k compounding_bias_r2 zoo climb compounding_bias --device cpu --rungs 2
k decode_group16 zoo climb decode_group16 --device cpu --rungs 8
k compounding_bias_r8 zoo climb compounding_bias --device cpu --rungs 8
# repro outputs
python - "$OUT" <<'PY' > $OUT/repro_cmds.txt
import json,sys
out=sys.argv[1]
doc=json.load(open(f"{out}/faulty.json"))
pts=doc["rungs"][0]["points"]
for st in ("failed","passed","oom"):
    for p in pts:
        if p["status"]==st:
            print(p["repro"]); break
doc=json.load(open(f"{out}/flaky.json"))
print(doc["rungs"][0]["points"][0]["repro"])
doc=json.load(open(f"{out}/rmsnorm_n_tail.json"))
print(next(p["repro"] for p in doc["rungs"][0]["points"] if p["status"]=="failed"))
PY
i=0; while read -r line; do i=$((i+1)); eval "python -m kladder.cli ${line#kladder }" > $OUT/repro$i.txt 2>&1; echo "repro$i exit=$?" >> $OUT/exits.txt; done < $OUT/repro_cmds.txt
python -m kladder.cli zoo list > $OUT/zoo_list.txt
echo done >> $OUT/exits.txt
