#!/bin/sh
# Run here, where Debian's packages are reachable: download what the lent GPU
# machines lack into .deps/, which git ignores, and name .deps in the device
# call's carry (scripts/gpu-accept.sh unpacks and builds it there):
#   - the headers of jansson and cmocka, cairo and the libraries it loads;
#   - Boost's program_options (nvbandwidth needs it);
#   - the reference tools' source: nccl-tests (NCCL_TESTS_TAG, default v2.19.6),
#     nvbandwidth (NVBANDWIDTH_TAG, default v0.8) and cuda-samples'
#     p2pBandwidthLatencyTest with the headers it includes (CUDA_SAMPLES_TAG,
#     default v13.0), from a local clone or mirror in NCCL_TESTS_GIT /
#     NVBANDWIDTH_GIT / CUDA_SAMPLES_GIT, else from GitHub.
set -eu
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
rm -f ./*.deb
apt-get download libjansson-dev libjansson4 libcmocka-dev libcmocka0
# cairo for --html and --svg, and the libraries it loads that the GPU machines (Ubuntu 24.04) lack; the build
# finds it without pkg-config there (CMakeLists.txt)
apt-get download libcairo2-dev libcairo2 libpixman-1-0 libfontconfig1 libfreetype6 libxcb-render0 libxcb-shm0 \
    libxrender1 libbrotli1
# nvbandwidth links Boost's program_options statically: the headers and the static library are enough
apt-get download libboost1.74-dev libboost-program-options1.74-dev libboost-program-options1.74.0
# source (tag) from a git directory $1 or from GitHub $2, into folder $3
source_of() {
    rm -rf "$3"
    if [ -n "$1" ]; then
        git -C "$1" archive --prefix="$3/" "$4" | tar -x
    else
        git clone -q --depth 1 -b "$4" "$2" "$3"
        rm -rf "$3/.git"
    fi
    echo "$4" > "$3/TAG"
}
source_of "${NCCL_TESTS_GIT:-}" https://github.com/NVIDIA/nccl-tests nccl-tests "${NCCL_TESTS_TAG:-v2.19.6}"
source_of "${NVBANDWIDTH_GIT:-}" https://github.com/NVIDIA/nvbandwidth nvbandwidth "${NVBANDWIDTH_TAG:-v0.8}"
# cuda-samples: p2pBandwidthLatencyTest and the four headers it needs, not the whole repository
CS_TAG=${CUDA_SAMPLES_TAG:-v13.0}
CS_PATHS="Common/helper_cuda.h Common/helper_string.h Common/helper_timer.h Common/exception.h
Samples/5_Domain_Specific/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu"
rm -rf cuda-samples
if [ -n "${CUDA_SAMPLES_GIT:-}" ]; then
    # shellcheck disable=SC2086
    git -C "$CUDA_SAMPLES_GIT" archive --prefix=cuda-samples/ "$CS_TAG" $CS_PATHS | tar -x
else
    git clone -q --depth 1 -b "$CS_TAG" https://github.com/NVIDIA/cuda-samples cuda-samples-full
    mkdir -p cuda-samples
    # shellcheck disable=SC2086
    (cd cuda-samples-full && tar -c $CS_PATHS) | tar -x -C cuda-samples
    rm -rf cuda-samples-full
fi
echo "$CS_TAG" > cuda-samples/TAG
# nccl.h for building nccl-tests where the GPU machine has NCCL's library but not its header
for h in /usr/include/nccl.h /usr/local/cuda/include/nccl.h; do
    if [ -f "$h" ]; then mkdir -p nccl-include && cp "$h" nccl-include/; break; fi
done
ls -la
