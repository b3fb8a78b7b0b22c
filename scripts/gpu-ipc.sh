#!/bin/bash
# issue 14 device run: build, p2pscope ipc's GPU test (two worker processes), then the command itself if built.
set -u
L=$OUT; mkdir -p $L
date -u > $L/date.txt; nvidia-smi -L >> $L/date.txt
scripts/build.sh > $L/build.log 2>&1; echo "build rc=$?"; tail -3 $L/build.log
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 400 build/tests/gpu/test_gpu_ipc > $L/ipc.log 2>&1; echo "test_gpu_ipc rc=$?"; tail -40 $L/ipc.log
if build/p2pscope ipc --help > /dev/null 2>&1; then
  timeout 300 build/p2pscope ipc --json=$L/ipc.json > $L/ipc_cli.txt 2>&1; echo "p2pscope ipc rc=$?"; cat $L/ipc_cli.txt
fi
