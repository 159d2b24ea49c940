#!/bin/bash
# $1 = tree, $2 = label
cd $1
export PYTHONPATH=$1/src KLADDER_HISTORY=/tmp/rp/$2.db
/usr/bin/time -f "%e wall %U user %S sys" -o /tmp/rp/$2.time python -m kladder zoo climb rmsnorm_n_tail config_writes_zeros gemm_k_tail nan_blind --device cpu --no-history --json /tmp/rp/$2.json > /tmp/rp/$2.txt 2>&1
echo "exit $?" >> /tmp/rp/$2.time
