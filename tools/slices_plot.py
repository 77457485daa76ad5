#!/usr/bin/env python3
"""slices_plot.py - plots a tools/sim_slices.sh CSV: all-reduce bus bandwidth against the number of
slices joined by DCN, one line per algorithm.

usage: slices_plot.py SLICES.csv OUT.png [TITLE]
The CSV has the columns algo,slices,chips,time_s,busbw_GBps,dcn_span_s,dcn_bytes.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    series = {}
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f):
            series.setdefault(row["algo"], []).append(
                (int(row["slices"]), float(row["busbw_GBps"])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algo, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=algo)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("slices (joined by DCN)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(argv[3] if len(argv) > 3 else "tpudist-sim")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
