# tree_copy.sh - sourced by the suites that build the project a second way (asan, fuzz).
# treeCopy TOP DEST: DEST emptied, then a copy of TOP's tracked files (changed ones as they are),
# autoreconf'd. A fresh copy every run: copied files keep their times, so objects of an older copy
# could look newer than the sources they were built from.
treeCopy() {
  rm -rf "$2"
  mkdir -p "$2"
  (cd "$1" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$2" || return 1
  (cd "$2" && autoreconf -fi >/dev/null 2>&1) || { echo "autoreconf failed"; return 1; }
}
