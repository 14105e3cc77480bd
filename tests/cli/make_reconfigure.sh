#!/usr/bin/env bash
# make_reconfigure.sh - the top-level Makefile configures again after a configure that failed: a
# temp copy of the Makefile runs with a fake `cmake` first on PATH that records its calls, and a
# build dir holding CMakeCache.txt but no generated Makefile (what a configure that stopped at a
# missing dependency leaves) must get `cmake -S . -B build`; a complete one must not.
set -euo pipefail
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/Makefile" "$tmp/Makefile"
mkdir -p "$tmp/bin" "$tmp/build"
cat > "$tmp/bin/cmake" <<'SH'
#!/bin/sh
echo "cmake $*" >> "$CALLS"
SH
chmod +x "$tmp/bin/cmake"
export CALLS=$tmp/calls PATH=$tmp/bin:$PATH
fail=0
run() { : > "$CALLS"; make -s -C "$tmp" "$@" > /dev/null; }

# half-configured: CMakeCache.txt, no Makefile
touch "$tmp/build/CMakeCache.txt"
run configure
grep -q -- "^cmake -S . -B build " "$CALLS" || { echo "FAIL: a half-configured build/ was not configured again"; fail=1; }
# never configured
rm -f "$tmp/build/CMakeCache.txt"
run configure
grep -q -- "^cmake -S . -B build " "$CALLS" || { echo "FAIL: an empty build/ was not configured"; fail=1; }
# configured: no cmake run (Makefiles or Ninja)
touch "$tmp/build/CMakeCache.txt" "$tmp/build/Makefile"
run configure
[ ! -s "$CALLS" ] || { echo "FAIL: a configured build/ was configured again: $(cat "$CALLS")"; fail=1; }
rm "$tmp/build/Makefile"; touch "$tmp/build/build.ninja"
run configure
[ ! -s "$CALLS" ] || { echo "FAIL: a configured Ninja build/ was configured again"; fail=1; }
# the sanitizer build dirs the same way
mkdir -p "$tmp/build-asan"; touch "$tmp/build-asan/CMakeCache.txt"
: > "$CALLS"; make -s -C "$tmp" asan > /dev/null 2>&1 || true
grep -q -- "^cmake -S . -B build-asan " "$CALLS" || { echo "FAIL: a half-configured build-asan/ was not configured again"; fail=1; }
[ $fail -eq 0 ] && echo "make_reconfigure: ok"
exit $fail
