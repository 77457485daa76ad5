#!/usr/bin/python3
"""bench/targets.py - checks bench/compare CSVs against the intra-host performance targets.

    bench/targets.py docs/results/perf/np2.csv [docs/results/perf/np2-small.csv ...]
    bench/targets.py --markdown docs/results/perf/np2.csv     (the rows as a markdown table)

Reads every row (collective, bytes, tpu_dist/ompi/gloo medians, memcpy) of the given CSVs and
prints, for each target, every size it covers with the measured ratio and MET or the gap:
  all-reduce busbw >= 1.5x Open MPI from 256 KiB to 64 MiB, >= 1.0x from 4 KiB to 256 KiB;
  8-byte all-reduce time <= Open MPI's;
  all-gather, reduce-scatter, all-to-all busbw >= 1.2x Open MPI from 64 KiB up;
  all-reduce busbw at 64 MiB >= 40% of the memcpy bandwidth of the same run;
  all-reduce busbw >= 10x gloo up to 1 MiB and >= 4x above.
Exit status 0 always: this is a report, not a test (the machine is shared and noisy).
"""
import csv
import sys

KIB, MIB = 1 << 10, 1 << 20


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for r in csv.DictReader(f):
                rows.append({k: (v if k == "collective" else float(v)) for k, v in r.items()})
    return rows


def check(name, rows, value, goal, fmt="%.2fx"):
    met = 0
    for r in rows:
        v = value(r)
        ok = v == v and v >= goal  # NaN never meets
        met += ok
        print("  %-10d %s %s" % (r["bytes"], fmt % v, "MET" if ok else "gap %.2f" % (goal - v)))
    print("%s: %d of %d sizes met\n" % (name, met, len(rows)))


def markdown(rows):
    print("| collective | bytes | tpu_dist us | busbw | Open MPI us | busbw | gloo us | busbw "
          "| x Open MPI | x gloo | memcpy GB/s |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print("| %s | %s | %.1f | %.3f | %.1f | %.3f | %.1f | %.3f | %.2f | %.2f | %.1f |" % (
            r["collective"], human(int(r["bytes"])), r["tpu_dist_us"], r["tpu_dist_busbw"],
            r["ompi_us"], r["ompi_busbw"], r["gloo_us"], r["gloo_busbw"], r["ratio_ompi"],
            r["ratio_gloo"], r["memcpy_gbs"]))


def human(b):
    for unit, m in (("MiB", MIB), ("KiB", KIB)):
        if b >= m and b % m == 0:
            return "%d %s" % (b // m, unit)
    return "%d" % b


def main():
    if sys.argv[1:2] == ["--markdown"]:
        markdown(load(sys.argv[2:]))
        return
    rows = load(sys.argv[1:])

    def sel(coll, lo, hi):
        return sorted((r for r in rows if r["collective"] == coll and lo <= r["bytes"] <= hi),
                      key=lambda r: r["bytes"])

    print("== all-reduce busbw vs Open MPI >= 1.5x, 256 KiB .. 64 MiB")
    check("allreduce/ompi large", sel("allreduce", 256 * KIB, 64 * MIB),
          lambda r: r["ratio_ompi"], 1.5)
    print("== all-reduce busbw vs Open MPI >= 1.0x, 4 KiB .. 256 KiB")
    check("allreduce/ompi mid", sel("allreduce", 4 * KIB, 256 * KIB), lambda r: r["ratio_ompi"],
          1.0)
    print("== 8-byte all-reduce: Open MPI time / tpu_dist time >= 1.0")
    check("allreduce 8 B", sel("allreduce", 8, 8), lambda r: r["ompi_us"] / r["tpu_dist_us"], 1.0)
    for coll in ("allgather", "reducescatter", "alltoall"):
        print("== %s busbw vs Open MPI >= 1.2x, 64 KiB up" % coll)
        check("%s/ompi" % coll, sel(coll, 64 * KIB, 1 << 40), lambda r: r["ratio_ompi"], 1.2)
    print("== all-reduce busbw at 64 MiB / memcpy GB/s >= 0.40")
    check("allreduce/memcpy", sel("allreduce", 64 * MIB, 64 * MIB),
          lambda r: r["tpu_dist_busbw"] / r["memcpy_gbs"] if r["memcpy_gbs"] else float("nan"),
          0.40, "%.2f ")
    print("== all-reduce busbw vs gloo >= 10x up to 1 MiB")
    check("allreduce/gloo small", sel("allreduce", 0, MIB), lambda r: r["ratio_gloo"], 10.0)
    print("== all-reduce busbw vs gloo >= 4x above 1 MiB")
    check("allreduce/gloo large", sel("allreduce", MIB + 1, 1 << 40), lambda r: r["ratio_gloo"],
          4.0)


if __name__ == "__main__":
    main()
