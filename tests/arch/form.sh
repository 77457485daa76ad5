#!/usr/bin/env bash
# tests/arch/form.sh - the tree's form: every C and C++ file git knows (committed or added) is
# clean under the repository's .clang-format, and every commit subject since FORM_BASE is at most
# 72 characters (older history is exempt). Each check is then shown to fail on a planted fault: a
# misformatted copy of a file and an over-long subject.
set -uo pipefail
cd "$(dirname "$0")/../.."
FORM_BASE=6a4e782
MAX_SUBJECT=72
fail=0

command -v clang-format >/dev/null || { echo "FAIL: clang-format is not installed"; exit 1; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "FAIL: not a git checkout"; exit 1; }

mapfile -d '' files < <(git ls-files -z --cached --others --exclude-standard \
  '*.c' '*.h' '*.cc' '*.cpp' '*.hpp')
echo "clang-format: ${#files[@]} files"
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  grep -E '^[^ ]+:[0-9]+:[0-9]+: error' <<<"$out" | cut -d: -f1 | sort | uniq -c |
    sed 's/^/  not clang-format clean: /'
  echo "FAIL: run clang-format -i on the files above"
  fail=1
fi

# subjects: FORM_BASE must be in this history (a shallow clone lacks it: fetch more)
git merge-base --is-ancestor "$FORM_BASE" HEAD 2>/dev/null ||
  { echo "FAIL: base commit $FORM_BASE is not in this history (shallow clone?)"; exit 1; }
# long: of lines "HASH SUBJECT", those whose subject is over MAX_SUBJECT characters
# (characters, not bytes: python3 reads UTF-8)
long() {
  /usr/bin/python3 -c 'import sys
for l in sys.stdin.buffer.read().decode("utf-8", "replace").splitlines():
    if len(l.split(" ", 1)[-1]) > int(sys.argv[1]): print(l)' "$MAX_SUBJECT"
}
bad=$(git log --format='%h %s' "$FORM_BASE..HEAD" | long)
n=$(git rev-list --count "$FORM_BASE..HEAD")
echo "commit subjects since $FORM_BASE: $n"
if [ -n "$bad" ]; then
  echo "FAIL: commit subjects over $MAX_SUBJECT characters:"
  sed 's/^/  /' <<<"$bad"
  fail=1
fi

# the checks must be able to fail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp .clang-format "$tmp/" && printf 'int  f( int x ){return x;}\n' >"$tmp/bad.c"
clang-format --dry-run --Werror "$tmp/bad.c" >/dev/null 2>&1 &&
  { echo "FAIL: a misformatted file passed clang-format"; fail=1; }
printf '0000000 %s\n' "$(printf 'x%.0s' $(seq $((MAX_SUBJECT + 1))))" | long | grep -q . ||
  { echo "FAIL: a $((MAX_SUBJECT + 1))-character subject passed"; fail=1; }
printf '0000000 %s\n' "$(printf 'x%.0s' $(seq $MAX_SUBJECT))" | long | grep -q . &&
  { echo "FAIL: a $MAX_SUBJECT-character subject was refused"; fail=1; }

[ $fail -eq 0 ] && echo "form: ok"
exit $fail
