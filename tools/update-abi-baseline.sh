#!/bin/sh
# Regenerate lib/pipesched.abi, the baseline the 'abi' test compares every
# build of libpipesched.so.1 against (docs/abi.md).
#
# Run it after ADDING API (new functions in a new version node of
# lib/pipesched.map, new enumerators, new macros), in the same commit, so the
# next change is checked against the grown interface. Never run it to make a
# changed or removed interface pass: that breaks every program built against
# the soname. The script refuses when abidiff sees anything but additions;
# --force overrides that, for interfaces that were never released.
#
# Usage: tools/update-abi-baseline.sh [--force] [BUILD_DIR]   (default: build)
# The build needs debug information (meson's default buildtype,
# debugoptimized, has it).
#
# SPDX-License-Identifier: MIT
set -eu

force=no
if [ "${1:-}" = "--force" ]; then
    force=yes
    shift
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
lib="$build/lib/libpipesched.so.1"
baseline="$src/lib/pipesched.abi"

for tool in abidw abidiff readelf; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "update-abi-baseline: $tool not found (install abigail-tools / binutils)" >&2
        exit 1
    }
done

if ! log=$(meson compile -C "$build" lib/pipesched:shared_library 2>&1); then
    printf '%s\n' "$log" >&2
    echo "update-abi-baseline: building the library in $build failed" >&2
    exit 1
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "update-abi-baseline: $lib has no debug information; build with -g" \
         "(buildtype debug or debugoptimized)" >&2
    exit 1
fi

if [ -f "$baseline" ] && [ "$force" = no ]; then
    # --no-added-syms hides added functions and variables: whatever abidiff
    # still reports is a change to the existing interface. The suppressions
    # file holds the sanctioned ones (fields appended to psched_op).
    set -- --no-added-syms --drop-private-types --headers-dir2 "$src/include"
    if [ -f "$src/lib/pipesched.abignore" ]; then
        set -- "$@" --suppressions "$src/lib/pipesched.abignore"
    fi
    if ! abidiff "$@" "$baseline" "$lib" >/dev/null; then
        abidiff "$@" "$baseline" "$lib" >&2 || true
        echo "update-abi-baseline: the interface changed, not only grew (see above);" \
             "the baseline is left as it is (docs/abi.md)" >&2
        exit 1
    fi
fi

# Options that keep the file a function of the public interface alone: only
# the exported functions and the types the public header defines, no paths,
# DT_NEEDED list (GLPK is optional) or sequence-numbered type ids that shift
# when a type is added. Locations stay, as bare file names: abidiff tells a
# public type from a private one by the header it was declared in, and
# ignores changes to types without a valid location. Line numbers inside
# .c files are dropped, so editing the library's code leaves the file as it is.
tmp="$baseline.tmp.$$"
trap 'rm -f "$tmp"' EXIT
abidw --headers-dir "$src/include" --drop-private-types --exported-interfaces-only \
      --no-corpus-path --no-comp-dir-path --no-elf-needed --short-locs \
      --type-id-style hash --out-file "$tmp" "$lib"
# Translation units are named by the path the compiler was given, which
# starts with the way from the build directory to the sources.
rel=$(realpath --relative-to="$build" "$src" | sed 's/[.]/[.]/g')
sed -e "s#path='$rel/#path='#" \
    -e "s#\(filepath='[^']*[.]c'\) line='[0-9]*' column='[0-9]*'#\1#g" "$tmp" > "$baseline"
echo "update-abi-baseline: wrote $baseline from $lib"
