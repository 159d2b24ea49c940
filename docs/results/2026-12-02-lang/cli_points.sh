#!/bin/bash
# usage: cli_points.sh SRC OUTDIR : `python -m kladder.cli points` for some zoo cases and tests/specs, both budgets, text and --json
src=$1; out=$2; mkdir -p $out
refs="kladder.zoo.padding_scale_read::spec kladder.zoo.splitk_semaphore_graph::spec kladder.zoo.allreduce_relaxed_flag::spec kladder.zoo.flag_no_effect::spec kladder.zoo.chunked_prefill_short::spec kladder.zoo.router_tie_pack::fixed /work/wt/lang/tests/specs/good.py /work/wt/lang/tests/specs/torch_ops.py /work/wt/lang/tests/specs/toolchain.py /work/wt/lang/tests/specs/collectives.py::allreduce /work/wt/lang/tests/specs/minilm_layernorm.py::good"
i=0
for r in $refs; do for d in cpu cuda; do i=$((i+1))
  (cd /tmp && PYTHONPATH=$src timeout 300 python -m kladder.cli points "$r" --device $d --json $out/$i.json > $out/$i.txt 2>&1; echo "rc=$?" >> $out/$i.txt)
  sed -i 's/"time": *"[^"]*"//' $out/$i.json 2>/dev/null
done; done
