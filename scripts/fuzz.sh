#!/bin/sh
# Fuzz the loaders of untrusted input with libFuzzer under ASan and UBSan:
#   scripts/fuzz.sh SECONDS [TARGET...]
# TARGETs: facts_json hwloc_xml sys_capture cli_args calibration ipc_message compare_run
# expect_file (default: all, one after the other, SECONDS each). Builds build-fuzz/ with clang (installs clang and its
# fuzzer runtime as root, like scripts/build.sh). The corpus grows in
# build-fuzz/work/TARGET, seeded from tests/data (see tests/fuzz/CMakeLists.txt);
# an input that crashes, leaks or hangs is written to tests/fuzz/regressions/TARGET/,
# where every later test run replays it: commit it with the fix. Exit 1 on a finding.
set -eu
cd "$(dirname "$0")/.."
secs=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
targets=${*:-facts_json hwloc_xml sys_capture cli_args calibration ipc_message compare_run expect_file}

if ! command -v clang >/dev/null 2>&1 || ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}\n' |
        clang -x c -fsanitize=fuzzer - -o /dev/null >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "p2pscope: installing clang and its fuzzer runtime" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null 2>&1 ||
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang "libclang-rt-$(clang --version | sed -n 's/.*version \([0-9]*\).*/\1/p;q')-dev" >/dev/null
    else
        echo "p2pscope: fuzzing needs clang with libFuzzer; run: sudo apt-get install -y clang libclang-rt-dev" >&2
        exit 3
    fi
fi

CC=clang P2PSCOPE_BUILD_DIR=build-fuzz scripts/build.sh -DP2PSCOPE_FUZZ=ON -DP2PSCOPE_SANITIZE=address,undefined \
    -DP2PSCOPE_CUDA_ARCHS=90 >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
found=0
for t in $targets; do
    work=build-fuzz/work/$t
    mkdir -p "$work" "tests/fuzz/regressions/$t"
    echo "fuzz: $t for $secs s" >&2
    # -timeout: an input taking longer than the loaders' own 10 s limit is a hang.
    if ! "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2560 -max_len=131072 \
            -print_final_stats=1 -artifact_prefix="tests/fuzz/regressions/$t/" \
            "$work" "build-fuzz/fuzz-corpus/$t" "tests/fuzz/regressions/$t" >"build-fuzz/fuzz-$t.log" 2>&1; then
        echo "fuzz: $t found a crash, leak or hang: see build-fuzz/fuzz-$t.log and tests/fuzz/regressions/$t/" >&2
        tail -40 "build-fuzz/fuzz-$t.log" >&2
        found=1
    else
        grep -E "^stat::number_of_executed_units|^Done" "build-fuzz/fuzz-$t.log" | tr '\n' ' ' >&2
        echo >&2
    fi
done
exit $found
