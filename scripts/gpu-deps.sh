#!/bin/sh
# Run here, where Debian's packages are reachable: download the packages whose
# headers the lent GPU machines lack (jansson, cmocka) into .deps/, which git
# ignores, and nccl-tests' source (the reference `p2pscope coll` is measured
# against; scripts/gpu-coll.sh builds it there): from NCCL_TESTS_GIT, a local
# clone or mirror, else from GitHub. Name .deps in the device call's carry;
# scripts/gpu-run.sh unpacks the packages.
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
NCCL_TESTS_TAG=${NCCL_TESTS_TAG:-v2.19.6}
rm -rf nccl-tests
if [ -n "${NCCL_TESTS_GIT:-}" ]; then
    git -C "$NCCL_TESTS_GIT" archive --prefix=nccl-tests/ "$NCCL_TESTS_TAG" | tar -x
else
    git clone -q --depth 1 -b "$NCCL_TESTS_TAG" https://github.com/NVIDIA/nccl-tests nccl-tests
    rm -rf nccl-tests/.git
fi
# nccl.h for building nccl-tests where the GPU machine has NCCL's library but not its header
for h in /usr/include/nccl.h /usr/local/cuda/include/nccl.h; do
    if [ -f "$h" ]; then mkdir -p nccl-include && cp "$h" nccl-include/; break; fi
done
ls -la
