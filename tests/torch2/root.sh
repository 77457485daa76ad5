#!/usr/bin/env bash
# tests/torch2/root.sh - makes (or reuses) a Debian root with a newer torch for the torch suites,
# then runs a command inside it.
#
#   tests/torch2/root.sh SUITE ensure         build the root if missing or its package set changed
#   tests/torch2/root.sh SUITE run CMD...     ensure, then run CMD in the root (bash -c) with /proc,
#                                             /dev, /dev/shm and /sys bound for the run only
#   tests/torch2/root.sh SUITE torch-tests    ensure, then print the root's path of torch's
#                                             test/distributed from Debian's source package of
#                                             the root's python3-torch (fetched once, cached)
#
# SUITE is a Debian suite: trixie (Debian 13: torch 2.6, gcc 14, Open MPI 5.0) or sid (torch
# 2.14, Python 3.14, gcc 16, Open MPI 6.0, transformers). The root lives outside the tree, in
# TD_ROOT_DIR (default /var/cache/tpu_dist/SUITE-root). It is made with debootstrap (minbase)
# from the Debian mirror the machine's own apt sources name, then the packages below are installed
# with apt-get inside it; sid's archive may serve a Release file past its Valid-Until date, so apt
# there does not check it. A stamp file in the root lists the package set; a different list
# rebuilds it. A root is only ever used once complete (it is built
# under ROOT.new and renamed). Everything that mounts runs in a private mount namespace
# (unshare -m), so no mount outlives the run even if it is killed; a trap unmounts as well.
# Any failure to make the root fails with a clear message.
set -euo pipefail

SUITE=${1:-}
PKGS="build-essential autoconf automake libtool pkg-config libssl-dev libhwloc-dev libfabric-dev
  libopenmpi-dev openmpi-bin libcunit1-dev python3-torch libtorch-dev pybind11-dev python3-pytest
  python3-setuptools python3-pip ninja-build"
APT_OPTS=
case "$SUITE" in
  trixie) ;;
  sid)
    PKGS="$PKGS python3-transformers"
    APT_OPTS="-o Acquire::Check-Valid-Until=false"
    ;;
  *)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
shift
ROOT=${TD_ROOT_DIR:-/var/cache/tpu_dist/$SUITE-root}
STAMP="suite=$SUITE packages=$(echo $PKGS | tr ' ' '\n' | sort | tr '\n' ' ')"

die() {
  echo "$SUITE root: $*" >&2
  exit 1
}

# The URI of the host's main Debian suite (the one named by the host's codename), from
# /etc/apt/sources.list or the deb822 files in /etc/apt/sources.list.d.
host_mirror() {
  local codename f
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 1
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v cn="$codename" '$1 == "deb" {
      i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) == cn) { print $i; exit } }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v cn="$codename" 'BEGIN { RS = "" } {
      uri = ""; ok = 0; n = split($0, l, "\n")
      for (j = 1; j <= n; j++) {
        if (l[j] ~ /^[ \t]*#/) continue
        m = split(l[j], w, /[ \t]+/)
        if (w[1] == "URIs:") uri = w[2]
        if (w[1] == "Suites:") for (k = 2; k <= m; k++) if (w[k] == cn) ok = 1
        if (w[1] == "Types:" && l[j] !~ /[ \t]deb([ \t]|$)/) uri = "-"
      }
      if (ok && uri != "" && uri != "-") { print uri; exit } }' "$f"
  done
}

# in_ns ROOTDIR CMD: runs CMD (bash -c, as root) chrooted in ROOTDIR, in a private mount
# namespace with /proc, /dev, /dev/shm and /sys bound; the mounts are undone on any exit.
in_ns() {
  local dir=$1
  shift
  unshare --mount --propagation private bash -c '
    set -eu
    dir=$1; shift
    undo() { for m in sys dev/shm dev proc; do umount -l "$dir/$m" 2>/dev/null || true; done; }
    trap undo EXIT
    trap "exit 143" TERM INT HUP
    mount -t proc proc "$dir/proc"
    mount --rbind /dev "$dir/dev"
    mount --rbind /dev/shm "$dir/dev/shm"
    mount --rbind /sys "$dir/sys"
    chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      DEBIAN_FRONTEND=noninteractive /bin/bash -c "$*" &
    wait $!
  ' in_ns "$dir" "$@"
}

build_root() {
  local new=$ROOT.new mirror
  command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/setup-debian installs it)"
  command -v unshare >/dev/null || die "unshare (util-linux) is not installed"
  [ "$(id -u)" -eq 0 ] || die "making the root needs root (debootstrap, chroot, mount)"
  mirror=$(host_mirror | head -n 1) || true
  [ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list*"
  local avail
  avail=$(df -Pk "$(dirname "$ROOT")" | awk 'NR==2{print $4}')
  [ "${avail:-0}" -ge 6000000 ] || die "less than 6 GB free under $(dirname "$ROOT")"
  echo "$SUITE root: debootstrap $SUITE from $mirror into $new"
  rm -rf "$new"
  unshare --mount --propagation private \
    debootstrap --variant=minbase "$SUITE" "$new" "$mirror" >"$ROOT.debootstrap.log" 2>&1 ||
    die "debootstrap failed (log: $ROOT.debootstrap.log): $(tail -n 3 "$ROOT.debootstrap.log")"
  echo "$SUITE root: apt-get install $(echo $PKGS)"
  in_ns "$new" "apt-get $APT_OPTS update -q && apt-get $APT_OPTS install -y -q --no-install-recommends $(echo $PKGS) && apt-get clean" \
    >"$ROOT.apt.log" 2>&1 || die "apt-get in the root failed (log: $ROOT.apt.log): $(tail -n 3 "$ROOT.apt.log")"
  echo "$STAMP" >"$new/.tpu_dist-stamp"
  rm -rf "$ROOT"
  mv "$new" "$ROOT"
}

# torch's test/distributed folder (which the binary packages do not ship) from Debian's source
# package of the root's python3-torch: apt-get source through a deb-src line for the host's
# mirror, in an apt state of its own (the root's apt configuration is left as it is), unpacked
# with dpkg-source (Debian's patches applied). Only test/distributed is kept, in the root under
# /var/cache/tpu_dist-src/pytorch_VERSION, so a run pays once per torch version; a rebuilt root
# fetches it again. Prints that path; fails with apt's own words if the source cannot be had.
torch_tests() {
  local mirror
  mirror=$(host_mirror | head -n 1) || true
  [ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list*"
  in_ns "$ROOT" "set -eu
    ver=\$(dpkg-query -W -f '\${source:Version}' python3-torch)
    dst=/var/cache/tpu_dist-src/pytorch_\$ver
    if [ ! -f \$dst/test/distributed/.complete ]; then
      mkdir -p /var/cache/tpu_dist-src
      tmp=\$(mktemp -d /var/cache/tpu_dist-src/fetch.XXXXXX)
      trap 'rm -rf \$tmp' EXIT
      echo 'deb-src $mirror $SUITE main' >\$tmp/sources.list
      mkdir -p \$tmp/lists/partial
      apt='apt-get -q $APT_OPTS -o APT::Sandbox::User=root -o Dir::Etc::SourceList='\$tmp/sources.list' -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists='\$tmp/lists
      cd \$tmp
      \$apt update >apt.log 2>&1 || { tail -n 3 apt.log >&2; exit 1; }
      \$apt source --download-only pytorch=\$ver >>apt.log 2>&1 || { grep -E '^(E|W):' apt.log | tail -n 3 >&2; exit 1; }
      dpkg-source -q -x pytorch_*.dsc src >>apt.log 2>&1 || { tail -n 3 apt.log >&2; exit 1; }
      rm -rf \$dst && mkdir -p \$dst/test
      mv src/test/distributed \$dst/test/
      touch \$dst/test/distributed/.complete
    fi
    echo \$dst/test/distributed" || die "no torch source for the root's python3-torch from $mirror (above)"
}

ensure() {
  mkdir -p "$(dirname "$ROOT")" || die "cannot create $(dirname "$ROOT")"
  exec 9>"$ROOT.lock"
  # A complete root is checked under the shared lock, so a run never waits for runs in
  # progress; only a (re)build takes the lock exclusively: one builder at a time, others wait
  # for it, then reuse its root.
  flock -s 9
  if [ "$(cat "$ROOT/.tpu_dist-stamp" 2>/dev/null)" != "$STAMP" ]; then
    flock -u 9
    flock 9
    if [ "$(cat "$ROOT/.tpu_dist-stamp" 2>/dev/null)" != "$STAMP" ]; then
      build_root
    fi
  fi
  flock -u 9
}

case "${1:-}" in
  ensure) ensure ;;
  run)
    shift
    ensure
    exec 9>"$ROOT.lock"
    flock -s 9 # a rebuild waits for runs in progress
    in_ns "$ROOT" "$@"
    ;;
  torch-tests)
    ensure
    exec 9>"$ROOT.lock"
    flock -s 9
    torch_tests
    ;;
  *)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
