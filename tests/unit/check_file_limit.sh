#!/bin/sh
# Under a file-size limit (ulimit -f) too small for the JSON, `topo --json=FILE` fails with the reason and leaves
# neither FILE nor its temporary file behind (the process is not killed mid-write by SIGXFSZ).
# usage: check_file_limit.sh P2PSCOPE_BINARY RECORDING
set -eu
bin=$1
rec=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rc=0
(cd "$dir" && ulimit -f 20 && exec "$bin" topo --topology "$rec" --json=out.json) > "$dir/out" 2> "$dir/err" || rc=$?
[ "$rc" = 1 ] || fail "exit $rc, not 1 (a failed run): $(cat "$dir/err")"
grep -q "cannot write $dir/out.json: File too large" "$dir/err" || fail "no reason given: $(cat "$dir/err")"
left=$(ls -A "$dir" | grep -v -x -e out -e err || true)
[ -z "$left" ] || fail "left behind: $left"
echo "file limit: ok"
