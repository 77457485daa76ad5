#!/usr/bin/env python3
"""sim_plot.py - plots a tpudist-sim --sweep CSV: bus bandwidth against message size, one line
per algorithm.

usage: sim_plot.py SWEEP.csv OUT.png [TITLE]
The CSV has the columns algo,bytes,time_s,algbw_GBps,busbw_GBps (tpudist-sim --csv).
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
                (float(row["bytes"]), float(row["busbw_GBps"])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algo, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=algo)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(argv[3] if len(argv) > 3 else "tpudist-sim")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
