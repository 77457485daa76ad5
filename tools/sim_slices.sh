#!/usr/bin/env bash
# tools/sim_slices.sh - all-reduce busbw against the number of slices joined by DCN (docs/simulator.md,
# "DCN: slices joined by host NICs"): tpudist-sim once per (algorithm, slice count), a CSV, and its
# plot (tools/sim_plot.py --x slices).
#   tools/sim_slices.sh [PRESET SHAPE BYTES "SLICES..." ALGOS CSV PNG]
# defaults: v5p 4x4x4 1G "1 2 4 8 16" hier,ring,torus docs/results/sim-v5p-slices.csv docs/results/sim-v5p-slices.png
# CSV columns: algo,slices,chips,time_s,busbw_GBps,dcn_span_s,dcn_bytes
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-v5p} shape=${2:-4x4x4} bytes=${3:-1G} slices=${4:-1 2 4 8 16}
algos=${5:-hier,ring,torus} csv=${6:-docs/results/sim-$preset-slices.csv} png=${7:-docs/results/sim-$preset-slices.png}
echo "algo,slices,chips,time_s,busbw_GBps,dcn_span_s,dcn_bytes" >"$csv"
for a in ${algos//,/ }; do
  for s in $slices; do
    out=$(tools/tpudist-sim --preset "$preset" --topology "$shape" --slices "$s" --coll allreduce \
      --bytes "$bytes" --algo "$a")
    line=$(grep -m1 '^allreduce ' <<<"$out")
    chips=$(grep -m1 -o '[0-9]* chips' <<<"$out" | cut -d' ' -f1)
    t=$(sed -E 's/.*time ([0-9.]+) us.*/\1/' <<<"$line")
    bus=$(sed -E 's/.*busbw ([0-9.]+) GB\/s.*/\1/' <<<"$line")
    span=$(grep -m1 -o 'span [0-9.]* us' <<<"$out" | cut -d' ' -f2 || true)
    dbytes=$(grep -m1 -o 'dcn: [0-9.e+]* B' <<<"$out" | cut -d' ' -f2 || true)
    echo "$a,$s,$chips,$(awk -v t="$t" 'BEGIN{print t/1e6}'),$bus,$(awk -v x="${span:-0}" 'BEGIN{print x/1e6}'),${dbytes:-0}" |
      tee -a "$csv"
  done
done
/usr/bin/python3 tools/sim_plot.py --x slices "$csv" "$png" "$preset $shape slices, all-reduce $bytes"
echo "csv $csv, plot $png"
