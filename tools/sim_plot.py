#!/usr/bin/env python3
"""sim_plot.py - plots a tpudist-sim CSV: bus bandwidth against a column, one line per algorithm.

usage: sim_plot.py [--x COLUMN] CSV OUT.png [TITLE]
Default: a tpudist-sim --sweep CSV (columns algo,bytes,time_s,algbw_GBps,busbw_GBps; x = bytes).
--x slices: a tools/sim_slices.sh CSV (columns algo,slices,chips,time_s,busbw_GBps,dcn_span_s,
dcn_bytes), busbw against the number of slices joined by DCN, both axes logarithmic.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

XLABEL = {"bytes": "message size (bytes)", "slices": "slices (joined by DCN)"}


def main(argv):
    x = "bytes"
    if len(argv) > 2 and argv[1] == "--x":
        x, argv = argv[2], argv[:1] + argv[3:]
    if len(argv) < 3 or x not in XLABEL:
        sys.stderr.write(__doc__)
        return 2
    series = {}
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f):
            series.setdefault(row["algo"], []).append(
                (float(row[x]), float(row["busbw_GBps"])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algo, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=algo)
    ax.set_xscale("log", base=2)
    if x == "slices":
        ax.set_yscale("log")
    ax.set_xlabel(XLABEL[x])
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(argv[3] if len(argv) > 3 else "tpudist-sim")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
