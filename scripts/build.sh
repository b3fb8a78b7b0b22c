#!/bin/sh
# Build p2pscope into build/ (or $P2PSCOPE_BUILD_DIR). Checks what the build
# needs; as root it installs the missing Debian/Ubuntu packages, otherwise it
# names them and stops (exit 3). Packages unpacked from .deps/*.deb (see
# scripts/gpu-deps.sh) are used where a machine has no package registry.
# Extra arguments go to cmake's configure step; P2PSCOPE_WERROR=1 turns
# warnings into errors (CI).
set -eu
cd "$(dirname "$0")/.."
BUILD=${P2PSCOPE_BUILD_DIR:-build}
prefix_args=""
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || cc=gcc

has_header() { printf "#include <%s>\n" "$1" | "$cc" -E -x c - $2 >/dev/null 2>&1; }

missing_pkgs() {
    m=""
    command -v cmake >/dev/null 2>&1 || m="$m cmake"
    command -v "$cc" >/dev/null 2>&1 || m="$m gcc"
    has_header hwloc.h "$1" || m="$m libhwloc-dev"
    has_header jansson.h "$1" || m="$m libjansson-dev"
    has_header cmocka.h "$1" || m="$m libcmocka-dev"
    echo "$m"
}

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
    echo "p2pscope: the CUDA toolkit (nvcc) is needed to build the GPU kernels: install it from NVIDIA" \
         "(it goes to /usr/local/cuda) or set CUDAToolkit_ROOT" >&2
    exit 3
fi

missing=$(missing_pkgs "")
if [ -n "$missing" ] && ls .deps/*.deb >/dev/null 2>&1; then
    # A machine without a registry: use the carried packages.
    mkdir -p .deps/prefix
    for f in .deps/*.deb; do dpkg -x "$f" .deps/prefix; done
    inc="-I$PWD/.deps/prefix/usr/include"
    missing=$(missing_pkgs "$inc")
    prefix_args="-DCMAKE_PREFIX_PATH=$PWD/.deps/prefix/usr"
fi
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "p2pscope: installing$missing" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    else
        echo "p2pscope: missing build packages; run: sudo apt-get install -y$missing" >&2
        exit 3
    fi
fi

# Optional: MPI, for `p2pscope ipc` and `coll` as one rank per GPU under mpirun (CMake's P2PSCOPE_MPI); not named
# when the build says it wants none (-DP2PSCOPE_MPI=OFF).
case " $* " in
    *" -DP2PSCOPE_MPI=OFF "*|*" -DP2PSCOPE_MPI=0 "*|*" -DP2PSCOPE_MPI=NO "*|*" -DP2PSCOPE_MPI=FALSE "*) ;;
    *) command -v mpicc >/dev/null 2>&1 ||
           echo "p2pscope: no mpicc: building without MPI (ipc and coll under mpirun are refused); for it:" \
                "apt-get install libopenmpi-dev openmpi-bin" >&2 ;;
esac

# Optional packages, installed as root where a registry is reachable (not from .deps/); without one, what it gives is
# left out of the build and the rest builds. optional PACKAGE WHAT CHECK: CHECK (a shell command) fails without it.
optional() {
    eval "$3" && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ -z "$prefix_args" ]; then
        echo "p2pscope: installing $1 ($2)" >&2
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null; } ||
            echo "p2pscope: $1 could not be installed: building without $2" >&2
    else
        echo "p2pscope: no $1: building without $2; for it: apt-get install $1" >&2
    fi
}
# cairo draws --html's and --svg's figures (CMake's P2PSCOPE_CAIRO); go-md2man makes the manual pages from docs/.
optional libcairo2-dev "the figures of --html and --svg" 'has_header cairo/cairo-svg.h "${inc:-}"'
optional go-md2man "the manual pages p2pscope(1) and libp2pscope(3)" 'command -v go-md2man >/dev/null 2>&1'

werror=""
[ "${P2PSCOPE_WERROR:-0}" = 1 ] && werror="-DP2PSCOPE_WERROR=ON"
# shellcheck disable=SC2086
cmake -S . -B "$BUILD" $prefix_args $werror "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
