#!/bin/bash
cd /work/wt/zoo21b
export PYTHONPATH=/work/wt/zoo21b/src TRITON_INTERPRET=1
for cr in 7:flag_no_effect 7:float_config_cells 7:silent_fallback 7:wrong_path_dispatch 4:jit_key_closure 4:plan_cache_restart 4:stale_state 4:undeclared_mutation 4:splitk_semaphore_graph 4:wrong_stream 8:compounding_bias 8:decode_group16 6:allreduce_relaxed_flag 6:allreduce_size_stride 6:allreduce_relaxed_flag_gpu 6:allreduce_size_stride_gpu 5:sampled_timing 5:atomic_order 5:missing_fence 3:shared_kernel_reference 3:scale_layout_mismatch 3:padding_scale_read 3:input_scratch 3:assumes_contiguous; do
  r=${cr%%:*}; c=${cr#*:}
  for v in buggy fixed; do
    f=""; [ $v = fixed ] && f=--fixed
    s=$(date +%s)
    echo "## $(date -u +%T) zoo climb $c $f --rungs $r ($(uptime | sed 's/.*load/load/'))"
    python -m kladder.cli zoo climb $c $f --rungs $r --device cpu --no-history --color never -q --json /tmp/zoo21b_hi/$c-$v.json > /tmp/zoo21b_hi/$c-$v.txt 2>&1
    echo "$c $v rung $r exit $? [$(( $(date +%s) - s )) s]"
  done
done
echo "## done $(date -u +%T)"
