#!/bin/sh
# Run here, where Debian's packages are reachable: download the packages whose
# headers the lent GPU machines lack (jansson, cmocka) into .deps/, which git
# ignores. Name .deps in the device call's carry; scripts/gpu-run.sh unpacks them.
set -eu
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
rm -f ./*.deb
apt-get download libjansson-dev libjansson4 libcmocka-dev libcmocka0
ls -la
