# Sourced by scripts/gpu-accept.sh on the lent GPU machine: build the reference tools from the source carried in
# .deps (scripts/gpu-deps.sh) into /tmp/refs: nccl-tests (without and with MPI), nvbandwidth and cuda-samples'
# p2pBandwidthLatencyTest. Sets NT, NT_MPI (nccl-tests' build folders, NT_MPI empty without mpicc), NVBW
# (nvbandwidth's binary) and P2PBW (the sample's), each empty if its build failed.
# Logs in $LOGS. Each build runs in the background; refs_wait waits for them all.
REFS=/tmp/refs
NT=$REFS/nt NT_MPI="" NVBW="" P2PBW=""
refs_build() {
    mkdir -p $REFS
    local lib hdr nh=$REFS/ncclhome deps=$PWD/.deps
    lib=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
    hdr=$(ls /usr/include/nccl.h /usr/local/cuda/include/nccl.h 2>/dev/null | head -1)
    [ -n "$hdr" ] || hdr=$deps/nccl-include/nccl.h
    mkdir -p $nh/include $nh/lib; cp "$hdr" $nh/include/; ln -sf "$lib" $nh/lib/libnccl.so
    local gencode="-gencode=arch=compute_90,code=sm_90"
    (make -C $deps/nccl-tests/src -j8 BUILDDIR=$NT NCCL_HOME=$nh CUDA_HOME=/usr/local/cuda NVCC_GENCODE="$gencode" \
        > "$LOGS/build-nccl-tests.log" 2>&1; echo "rc=$?" >> "$LOGS/build-nccl-tests.log") &
    if command -v mpicc > /dev/null; then
        local mh=$REFS/mpihome; mkdir -p $mh
        ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" $mh/include
        ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" $mh/lib
        NT_MPI=$REFS/nt-mpi
        (make -C $deps/nccl-tests/src -j8 BUILDDIR=$NT_MPI NCCL_HOME=$nh CUDA_HOME=/usr/local/cuda MPI=1 MPI_HOME=$mh \
            NVCC_GENCODE="$gencode" > "$LOGS/build-nccl-tests-mpi.log" 2>&1
         echo "rc=$?" >> "$LOGS/build-nccl-tests-mpi.log") &
    fi
    # nvbandwidth: Boost's program_options from the carried Debian packages, linked statically
    local bp=$REFS/boost
    mkdir -p $bp; for f in $deps/libboost*.deb; do dpkg -x "$f" $bp; done
    (cd $REFS && cmake -S $deps/nvbandwidth -B nvbw -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
        -DBoost_DIR=$bp/usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0 > "$LOGS/build-nvbandwidth.log" 2>&1 &&
        cmake --build nvbw -j8 >> "$LOGS/build-nvbandwidth.log" 2>&1; echo "rc=$?" >> "$LOGS/build-nvbandwidth.log") &
    local cs=$deps/cuda-samples
    (/usr/local/cuda/bin/nvcc -O2 -I$cs/Common $gencode -o $REFS/p2pBandwidthLatencyTest \
        $cs/Samples/5_Domain_Specific/p2pBandwidthLatencyTest/p2pBandwidthLatencyTest.cu \
        > "$LOGS/build-p2pbw.log" 2>&1; echo "rc=$?" >> "$LOGS/build-p2pbw.log") &
}
refs_wait() {
    wait
    [ -x $REFS/nvbw/nvbandwidth ] && NVBW=$REFS/nvbw/nvbandwidth
    [ -x $REFS/p2pBandwidthLatencyTest ] && P2PBW=$REFS/p2pBandwidthLatencyTest
    [ -n "$NT_MPI" ] && [ ! -x $NT_MPI/all_reduce_perf ] && NT_MPI=""
    for l in nccl-tests nccl-tests-mpi nvbandwidth p2pbw; do
        [ -f "$LOGS/build-$l.log" ] && echo "build $l: $(tail -1 "$LOGS/build-$l.log")"
    done
}
