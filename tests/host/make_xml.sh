#!/usr/bin/env bash
# tests/host/make_xml.sh - writes the recorded host the NUMA tests read (HWLOC_XMLFILE, hostDetect):
# hwloc's synthetic machine "pack:2 numa:2 core:4 pu:1" (2 packages x 2 NUMA nodes x 4 cores) with
# a latency matrix of the kind Linux reads from the ACPI SLIT, as hwloc exports it to XML:
#   numa-2x2-slit.xml  10 within a node, 12 to the other node of its package, 21 across packages
# Run from anywhere; needs a C compiler and hwloc's headers (libhwloc-dev).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/gen.c" <<'C'
#include <hwloc.h>
#include <stdio.h>
int main(int argc, char **argv) {
  hwloc_topology_t t;
  hwloc_obj_t objs[4];
  hwloc_uint64_t v[16];
  if (argc != 2 || hwloc_topology_init(&t) ||
      hwloc_topology_set_synthetic(t, "pack:2 numa:2 core:4 pu:1") || hwloc_topology_load(t))
    return 1;
  for (int i = 0; i < 4; i++) {
    objs[i] = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
    for (int j = 0; j < 4; j++) v[i * 4 + j] = i == j ? 10 : i / 2 == j / 2 ? 12 : 21;
  }
  hwloc_distances_add_handle_t d = hwloc_distances_add_create(
      t, "NUMALatency", HWLOC_DISTANCES_KIND_FROM_OS | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0);
  if (!d || hwloc_distances_add_values(t, d, 4, objs, v, 0) ||
      hwloc_distances_add_commit(t, d, 0) || hwloc_topology_export_xml(t, argv[1], 0))
    return 1;
  hwloc_topology_destroy(t);
  return 0;
}
C
cc -o "$tmp/gen" "$tmp/gen.c" $(pkg-config --cflags --libs hwloc)
"$tmp/gen" "$tmp/out.xml"
# without the synthetic description hwloc records, the host reads as a recorded one
grep -v 'name="SyntheticDescription"' "$tmp/out.xml" >"$here/numa-2x2-slit.xml"
echo "wrote $here/numa-2x2-slit.xml"
