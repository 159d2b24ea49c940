#!/usr/bin/env bash
# compare terminal outputs of two golden capture dirs, normalising times, paths and log names
norm() { sed -E 's#/tmp/base|/work/main#ROOT#g; s#/tmp/golden_(old|new)#OUT#g; s/[0-9]+\.[0-9]+ s\b/T s/g; s/\[[0-9.]+ s\]/[T s]/g; s/\([0-9]+\.[0-9]+ s\)/(T s)/g' "$1"; }
for f in $1/*.txt; do b=$(basename $f); [ -f $2/$b ] || { echo "MISSING $b"; continue; }; if ! diff -q <(norm $f) <(norm $2/$b) >/dev/null; then echo "=== DIFF $b"; diff <(norm $f) <(norm $2/$b) | head -${3:-20}; fi; done
