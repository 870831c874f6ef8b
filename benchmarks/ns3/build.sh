#!/usr/bin/env bash
# Build the ns-3 programs against the system ns-3 (Debian's libns3-dev).
#
#   bash benchmarks/ns3/build.sh [OUTPUT...]
#
# Each OUTPUT is the path of a program to build; its file name says which one
# (dumbbell, shortflows or twolink: the source is benchmarks/ns3/NAME.cc). With
# no OUTPUT, all three are built into benchmarks/ns3/build/. Compiler flags come
# from pkg-config when ns-3's .pc files are present, otherwise from the standard
# Debian include and library locations.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
programs=(dumbbell shortflows twolink)
if [[ $# -gt 0 ]]; then
    outputs=("$@")
else
    outputs=("${programs[@]/#/$here/build/}")
fi
modules=(core network internet point-to-point applications traffic-control)

die() {
    echo "build.sh: $*" >&2
    exit 1
}

command -v "${CXX:-g++}" >/dev/null || die "no C++ compiler found (install g++)"

cflags=()
libs=()
pc_names=("${modules[@]/#/ns3-}")
if command -v pkg-config >/dev/null && pkg-config --exists "${pc_names[@]}" 2>/dev/null; then
    # Debian 3.37's .pc files are slightly broken: Cflags contain a stray
    # "-I/usr;" token, and Libs name libgsl.so/libgslcblas.so by absolute
    # path although only libgsl-dev provides those files. Drop such tokens:
    # the ns-3 shared libraries already link GSL themselves.
    for f in $(pkg-config --cflags "${pc_names[@]}"); do
        [[ "$f" == *";"* ]] || cflags+=("$f")
    done
    for f in $(pkg-config --libs "${pc_names[@]}"); do
        if [[ "$f" == /* && ! -e "$f" ]]; then continue; fi
        libs+=("$f")
    done
else
    # No pkg-config data: look for the headers where Debian puts them.
    incdir=""
    for d in /usr/include/ns3 /usr/include/ns3.*; do
        if [[ -f "$d/core-module.h" ]]; then
            incdir="$(dirname "$d")"
            break
        fi
    done
    [[ -n "$incdir" ]] || die "ns-3 headers not found: libns3-dev is not installed (apt-get install libns3-dev)"
    cflags=(-I"$incdir")
    for m in "${modules[@]}"; do
        libs+=("-lns3-$m")
    done
fi

for out in "${outputs[@]}"; do
    name="$(basename "$out")"
    [[ " ${programs[*]} " == *" $name "* ]] ||
        die "$out: the file name must be one of: ${programs[*]}"
    mkdir -p "$(dirname "$out")"
    (
        set -x
        "${CXX:-g++}" -O2 -std=c++17 -Wall "${cflags[@]}" "$here/$name.cc" -o "$out" "${libs[@]}"
    )
done
