#!/usr/bin/env python3
"""moe_plot.py CSV PNG - plots tpudist-sim --moe rows (docs/simulator.md, "MoE expert
parallelism"): time per layer (dispatch + combine) and the fraction of the torus bound reached,
against the slice size, one line per placement, skew and algorithm; prints the rows as the
Markdown table of docs/simulator.md.

CSV rows (no header): chips,placement,skew,algo,dispatch_s,combine_s,bound_s,bisection_s,selected
then slices,dcn_bound_s (not plotted) and settle (tpudist-sim --settle; 0 or absent: exact)
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, png = sys.argv[1], sys.argv[2]
    lines = {}
    print("| chips | placement | skew | algorithm | dispatch (ms) | combine (ms) | layer (ms) "
          "| bound (ms) | of bound | selected | re-levelling |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with open(src) as f:
        for row in csv.reader(f):
            chips, place, skew, algo = int(row[0]), row[1], row[2], row[3]
            disp, comb, bound = float(row[4]), float(row[5]), float(row[6])
            settle = float(row[11]) if len(row) > 11 else 0.0
            key = f"{algo} {place} {skew}"
            lines.setdefault(key, []).append((chips, (disp + comb) * 1e3, bound / max(disp, comb)))
            print(f"| {chips:,} | {place} | {skew} | {algo} | {disp * 1e3:.2f} | {comb * 1e3:.2f} "
                  f"| {(disp + comb) * 1e3:.2f} | {bound * 1e3:.2f} "
                  f"| {100 * bound / max(disp, comb):.1f}% | {row[8]} "
                  f"| {f'settle {settle:g}' if settle > 0 else 'exact'} |")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for key in sorted(lines):
        pts = sorted(lines[key])
        xs = [p[0] for p in pts]
        style = "-" if key.startswith("torus") else "--"
        ax1.plot(xs, [p[1] for p in pts], style, marker="o", label=key)
        ax2.plot(xs, [100 * p[2] for p in pts], style, marker="o", label=key)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("v7 chips")
        ax.grid(True, which="both", alpha=0.3)
    ax1.set_yscale("log")
    ax1.set_ylabel("time per layer, dispatch + combine (ms)")
    ax2.set_ylabel("% of the torus bound (bisection or injection)")
    ax1.legend(fontsize=7)
    fig.suptitle("MoE layer (128 experts, top-8, hidden 4096, bf16, 2048 tokens/chip) on v7")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
