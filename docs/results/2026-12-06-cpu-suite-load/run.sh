#!/usr/bin/env bash
# issue 36 item 6: the timing-sensitive test files beside one CPU-bound process per core
cd /work/wt/suite
export PYTHONPATH=$PWD/src
python -c 'while True: pass' & B1=$!
python -c 'while True: pass' & B2=$!
date -u +%FT%TZ; uptime; git log --oneline -1 | cut -c1-12
python -m pytest -q -p no:cacheprovider -n 0 -rA tests/test_signals.py tests/test_reports.py tests/test_alone.py tests/test_explore.py tests/test_kernel_processes.py tests/test_overlap.py tests/test_peer_budget.py
rc=$?
kill $B1 $B2
date -u +%FT%TZ; uptime; echo "rc=$rc"
