#!/bin/bash
# pair.sh LABEL FILE [pytest args...]: the old tree and the new one at once, each file alone, -n 1
label=$1; shift
for t in old new; do
  if [ $t = old ]; then root=/tmp/s25b-old; else root=/work/wt/suite25b; fi
  ( cd $root && KLADDER_TEST_CPU=/tmp/s25b-m/$label/$t PYTHONPATH=$root/src timeout 3000 python -m pytest -q -n 1 --dist loadgroup -p no:cacheprovider "$@" > /tmp/s25b-m/$label-$t.txt 2>&1; echo "rc=$? $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> /tmp/s25b-m/$label-$t.txt ) &
done
wait
