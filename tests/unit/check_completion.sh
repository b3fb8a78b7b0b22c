#!/bin/sh
# The bash completion (completions/p2pscope) with the built binary: commands
# first, then the options of the command typed (its own --help), file names
# after options that take one.
# usage: check_completion.sh P2PSCOPE_BINARY COMPLETION_FILE
set -eu
bin=$1
comp=$2
command -v bash > /dev/null || { echo "no bash: skipped"; exit 77; }
complete_words() { # the words typed, the last one being completed; prints the candidates, one a line
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _p2pscope; printf "%s\n" "${COMPREPLY[@]}"' \
        sh "$comp" "$@"
}
fail() { echo "FAIL: $*"; exit 1; }
out=$(complete_words "$bin" i)
[ "$out" = ipc ] || fail "'p2pscope i' completes to '$out', not ipc"
out=$(complete_words "$bin" "")
echo "$out" | grep -qx coll && echo "$out" | grep -qx doctor || fail "the commands: $out"
out=$(complete_words "$bin" ipc --r)
echo "$out" | grep -qx -- --round-trips || fail "ipc --r: $out"
out=$(complete_words "$bin" ipc --c)
echo "$out" | grep -qx -- --calibrate && fail "ipc offers copy's --calibrate: $out"
out=$(complete_words "$bin" copy --c)
echo "$out" | grep -qx -- --calibrate && echo "$out" | grep -qx -- --calibration || fail "copy --c: $out"
out=$(complete_words "$bin" coll --im)
[ "$out" = --impl ] || fail "coll --im: $out"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
touch "$dir/machine.json"
out=$(complete_words "$bin" doctor --topology "$dir/mach")
[ "$out" = "$dir/machine.json" ] || fail "a file after --topology: $out"
out=$(complete_words "$bin" comp)
[ "$out" = compare ] || fail "'p2pscope comp' completes to '$out', not compare"
out=$(complete_words "$bin" compare a.json b.json --f)
[ "$out" = --fail-above ] || fail "compare --f: $out"
out=$(complete_words "$bin" compare "$dir/mach")
[ "$out" = "$dir/machine.json" ] || fail "a run's file after compare: $out"
out=$(complete_words "$bin" rend)
[ "$out" = render ] || fail "'p2pscope rend' completes to '$out', not render"
out=$(complete_words "$bin" render "$dir/mach")
[ "$out" = "$dir/machine.json" ] || fail "a run's file after render: $out"
out=$(complete_words "$bin" render run.json --)
[ "$(echo "$out" | grep -v -- '--help\|--version' | sort | tr '\n' ' ')" = "--csv --html --svg " ] || fail "render --: $out"
# Every option offered to a command is one that command takes: never one a description only mentions
# (doctor's help speaks of nvlink --watch, bw's of --save), which the command would then refuse.
for cmd in report devices bw lat verify list topo nvlink doctor copy ipc coll compare render check nvbandwidth p2pbw; do
    for opt in $(complete_words "$bin" "$cmd" --); do
        case $opt in --help|--version) continue ;; esac
        err=$("$bin" "$cmd" "$opt" --help 2>&1 > /dev/null || true)
        case $err in
            *"goes with"*|*" go with"*|*"does not go with"*|*"unknown option"*) fail "$cmd offers $opt, which it refuses: $err" ;;
        esac
    done
done
out=$(complete_words "$bin" nvbandwidth --buf)
[ "$out" = --bufferSize ] || fail "nvbandwidth --buf: $out" # nvbandwidth's options are camelCase
out=$(complete_words "$bin" p2pbw --p2)
[ "$out" = --p2p_read ] || fail "p2pbw --p2: $out" # the sample's options have digits and underscores
out=$(complete_words "$bin" doctor --w)
[ -z "$out" ] || fail "doctor --w offers: $out"
out=$(complete_words "$bin" check --ba)
[ "$out" = "--baseline" ] || fail "check --ba offers: $out"
echo "completion: ok"
