#!/usr/bin/env bash
# Mutation testing: apply realistic one-line bugs (scripts/mutants.txt) one at
# a time to a copy of the tree, rebuild, run the unit tests, and count how many
# the tests catch. The real tree is never modified.
#
#   scripts/mutate.sh [--threshold PCT] [--work DIR] [--list] [--check] [--only NAME...]
#
# --threshold PCT  exit 1 when fewer than PCT % of the mutants are killed (default 80)
# --work DIR       build in DIR and keep it; a later run with the same DIR rebuilds
#                  only what changed (default: a temporary directory, removed at the end)
# --list           print the mutants' names and files, and stop
# --check          check that each mutant's original text occurs exactly once, and stop
# --only NAME...   run these mutants only (every argument after --only is a name)
# -j N             build and test jobs (default 2)
#
# A mutant whose original text is not found exactly once, or that does not
# build, is an error: the list must not rot silently. Exit status: 0 score at
# or above the threshold, 1 below it, 2 errors (usage, list, baseline).
#
# The list's format: blocks of four lines separated by blank lines; '#' starts
# a comment line. The text after "from: " and "to: " is taken literally (one
# space after the colon; leading spaces are part of the text).
#   name: size_zero_accepted
#   file: src/lib/util/size.c
#   from: if (v == 0 || v > (1ull << 40) / m)
#   to: if (v > (1ull << 40) / m)
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
list="$root/scripts/mutants.txt"
threshold=80
work=""
mode=run
jobs=2
only=()

usage() {
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    --threshold) [ $# -ge 2 ] || usage; threshold=$2; shift 2 ;;
    --threshold=*) threshold=${1#*=}; shift ;;
    --work) [ $# -ge 2 ] || usage; work=$2; shift 2 ;;
    --work=*) work=${1#*=}; shift ;;
    --list) mode=list; shift ;;
    --check) mode=check; shift ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift 2 ;;
    --only) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do only+=("$1"); shift; done ;;
    -h | --help) usage ;;
    *) echo "mutate.sh: unknown argument: $1" >&2; usage ;;
    esac
done
case "$threshold" in '' | *[!0-9]*) echo "mutate.sh: --threshold takes a whole percentage" >&2; exit 2 ;; esac
case "$jobs" in '' | *[!0-9]* | 0) echo "mutate.sh: -j takes a positive number" >&2; exit 2 ;; esac

# ---- the list -------------------------------------------------------------
names=() files=() froms=() tos=()
parse_list() {
    local line n=0 name="" file="" from="" to="" have_to=0 lineno=0

    flush() {
        if [ -z "$name$file$from" ] && [ $have_to = 0 ]; then return 0; fi
        if [ -z "$name" ] || [ -z "$file" ] || [ -z "$from" ] || [ $have_to = 0 ]; then
            echo "mutate.sh: $list: incomplete mutant before line $lineno (name, file, from, to)" >&2
            exit 2
        fi
        for x in "${names[@]}"; do
            if [ "$x" = "$name" ]; then echo "mutate.sh: $list: mutant $name named twice" >&2; exit 2; fi
        done
        names+=("$name") files+=("$file") froms+=("$from") tos+=("$to")
        name="" file="" from="" to="" have_to=0
    }
    while IFS= read -r line || [ -n "$line" ]; do
        lineno=$((lineno + 1))
        case "$line" in
        '#'*) ;;
        '') flush ;;
        'name: '*) name=${line#name: } ;;
        'file: '*) file=${line#file: } ;;
        'from: '*) from=${line#from: } ;;
        'to: '*) to=${line#to: }; have_to=1 ;;
        'to:') to=""; have_to=1 ;;
        *) echo "mutate.sh: $list:$lineno: not a name/file/from/to line: $line" >&2; exit 2 ;;
        esac
    done <"$list"
    flush
    n=${#names[@]}
    [ "$n" -gt 0 ] || { echo "mutate.sh: $list holds no mutants" >&2; exit 2; }
}
parse_list

selected=()
if [ ${#only[@]} -gt 0 ]; then
    for want in "${only[@]}"; do
        found=-1
        for i in "${!names[@]}"; do [ "${names[$i]}" = "$want" ] && found=$i; done
        [ $found -ge 0 ] || { echo "mutate.sh: no mutant named $want (see --list)" >&2; exit 2; }
        selected+=("$found")
    done
else
    selected=("${!names[@]}")
fi

if [ $mode = list ]; then
    for i in "${selected[@]}"; do printf '%-34s %s\n' "${names[$i]}" "${files[$i]}"; done
    exit 0
fi

# How often $2 occurs in file $1 (literal text).
occurrences() {
    local content rest

    IFS= read -r -d '' content <"$1"
    rest=${content//"$2"/}
    echo $(((${#content} - ${#rest}) / ${#2}))
}

# Replace the one occurrence of $2 in file $1 by $3.
apply() {
    local content

    IFS= read -r -d '' content <"$1"
    printf '%s' "${content/"$2"/"$3"}" >"$1"
}

if [ $mode = check ]; then
    bad=0
    for i in "${selected[@]}"; do
        f="$root/${files[$i]}"
        if [ ! -f "$f" ]; then
            echo "ERROR ${names[$i]}: no file ${files[$i]}" >&2; bad=$((bad + 1)); continue
        fi
        c=$(occurrences "$f" "${froms[$i]}")
        if [ "$c" != 1 ]; then
            echo "ERROR ${names[$i]}: original text found $c times in ${files[$i]}: ${froms[$i]}" >&2
            bad=$((bad + 1))
        fi
    done
    echo "${#selected[@]} mutants checked, $bad errors"
    [ $bad = 0 ] || exit 2
    exit 0
fi

# ---- the copy and its build ------------------------------------------------
keep=1
if [ -z "$work" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/p2pscope-mutate.XXXXXX") || exit 2
    keep=0
fi
mkdir -p "$work/src" "$work/logs" || exit 2
work=$(cd "$work" && pwd)
case "$work/" in "$root/"*) echo "mutate.sh: --work must lie outside the tree" >&2; exit 2 ;; esac
tree="$work/src"
build="$work/build"
current=-1 # the mutant applied now, restored on any exit

restore() {
    if [ $current -ge 0 ]; then
        cp "$root/${files[$current]}" "$tree/${files[$current]}" # a new mtime: rebuilt next time
        current=-1
    fi
}
cleanup() {
    restore
    [ $keep = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The working tree as git sees it (tracked and untracked files, ignored ones
# left out); a file is copied only when it differs, so a kept build stays warm.
# Files gone from the tree go from the copy too.
echo "mutate.sh: copying the tree to $tree"
(cd "$root" && git ls-files -z --cached --others --exclude-standard) >"$work/listed" || exit 2
: >"$work/files"
while IFS= read -r -d '' f; do
    [ -f "$root/$f" ] || continue
    printf '%s\0' "$f" >>"$work/files"
    if ! cmp -s "$root/$f" "$tree/$f"; then
        mkdir -p "$tree/$(dirname "$f")" && cp "$root/$f" "$tree/$f" || exit 2
    fi
done <"$work/listed"
(cd "$tree" && find . -type f -printf '%P\0') | sort -z >"$work/copied"
sort -z "$work/files" | comm -z -23 "$work/copied" - | (cd "$tree" && xargs -0 -r rm -f --) || exit 2

echo "mutate.sh: building in $build"
if ! cmake -S "$tree" -B "$build" -DP2PSCOPE_CUDA_ARCHS=90 -DP2PSCOPE_WERROR=OFF >"$work/logs/configure.log" 2>&1 ||
    ! nice cmake --build "$build" -j"$jobs" >"$work/logs/build.log" 2>&1; then
    echo "mutate.sh: the unmutated tree does not build; see $work/logs/" >&2
    keep=1
    exit 2
fi

# The unit tests (never the GPU ones). A mutant runs the quick tests first and
# the slow ones (over 2 s in the baseline) only when the quick ones pass, so a
# killed mutant costs seconds.
slow=""
ctest_unit() { # $1: log file; the rest: ctest arguments
    local log=$1

    shift
    timeout 900 ctest --test-dir "$build" -L unit -LE gpu -j"$jobs" --timeout 120 --stop-on-failure \
        --output-on-failure "$@" >>"$log" 2>&1
}
run_tests() { # $1: log file
    : >"$1"
    if [ -z "$slow" ]; then
        ctest_unit "$1"
    else
        ctest_unit "$1" -E "$slow" && ctest_unit "$1" -R "$slow"
    fi
}

echo "mutate.sh: baseline unit tests"
if ! run_tests "$work/logs/baseline.log"; then
    echo "mutate.sh: the unit tests fail without a mutant; see $work/logs/baseline.log" >&2
    keep=1
    exit 2
fi
slow=$(awk '/ Test +#[0-9]+: .* Passed +[0-9.]+ sec/ { for (i = 1; i < NF; i++) if ($i == "Passed" && $(i + 1) > 2) print $4 }' \
    "$work/logs/baseline.log" | sed 's/[]\\.*^$+?(){}|[]/\\&/g' | paste -sd'|' -)
[ -z "$slow" ] || slow="^($slow)\$"

# ---- the mutants -------------------------------------------------------------
killed=0 survived=0 errors=0
results=()
for i in "${selected[@]}"; do
    t0=$SECONDS
    name=${names[$i]} file=${files[$i]}
    f="$tree/$file"
    log="$work/logs/$name.log"
    if [ ! -f "$f" ]; then
        r="ERROR (no such file)"
    elif c=$(occurrences "$f" "${froms[$i]}") && [ "$c" != 1 ]; then
        r="ERROR (original text found $c times)"
    else
        current=$i
        apply "$f" "${froms[$i]}" "${tos[$i]}"
        if ! timeout 900 nice cmake --build "$build" -j"$jobs" >"$log" 2>&1; then
            r="ERROR (does not build)"
        elif run_tests "$log.tests"; then
            r="survived"
        else
            r="killed"
        fi
        restore
    fi
    case "$r" in
    killed) killed=$((killed + 1)) ;;
    survived) survived=$((survived + 1)) ;;
    *) errors=$((errors + 1)); echo "mutate.sh: $name: $r: ${froms[$i]}" >&2 ;;
    esac
    results+=("$(printf '%-34s %-36s %s' "$name" "$file" "$r")")
    printf '%-34s %-10s %3d s\n' "$name" "$r" $((SECONDS - t0))
done

echo
printf '%-34s %-36s %s\n' "mutant" "file" "result"
printf '%s\n' "${results[@]}"
total=$((killed + survived))
score=0
[ $total -gt 0 ] && score=$((100 * killed / total))
echo
echo "killed $killed of $total ($score %), threshold $threshold %; errors $errors"
[ $keep = 1 ] && echo "logs: $work/logs/"
[ $errors = 0 ] || exit 2
[ $score -ge "$threshold" ] || exit 1
exit 0
