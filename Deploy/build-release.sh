#!/usr/bin/env bash
# Builds the programs the package installs (voipd, voipctl, voipd-transfer, and libvoipd's
# archive) as they ship: release, with the Swift runtime linked in, and laid out to start
# fast and small (docs/BENCHMARKS.md, "Start-up and memory at start"):
#   --static-swift-stdlib       no Swift runtime, Foundation or ICU shared objects to load
#   -function-sections, lld's --symbol-ordering-file=Deploy/startup.order
#                               the functions start-up runs side by side at the front of the
#                               text (otherwise they are spread over 10 MB, and every page
#                               fault maps 64 KiB around the one it needs: 7 MB resident)
#   -z pack-relative-relocs     RELR relocations: 8 KB for ld.so to read instead of 1 MB
#   -L Deploy/link, -static-libgcc  libstdc++ and libgcc linked in: the Swift runtime's C++
#                               without loading libstdc++.so (its relocations and look-ups)
#   -disable-concrete-type-metadata-mangled-name-accessors
#                               a concrete generic type's metadata (the standard library's
#                               array storage specialised for voipctl's element types) made
#                               by its accessor, not by demangling its name at run time
#   --disable-local-rpath       no $ORIGIN run path: ld.so looks for libc in the system's
#                               directories only, not in 40 names beside the program
#   --no-export-dynamic         only what libc needs in the dynamic symbol table, not 6,600
#                               Swift symbols (static-stdlib-args.lnk exports them) whose
#                               hash table and names every symbol look-up touches
# Deploy/startup-order.sh regenerates the order; a stale one only costs memory, never
# correctness (symbols it names that are gone are ignored).
#
# In a scratch directory of its own (.build/shipped), so that these flags and a plain
# `swift build -c release` (benchmarks, `swift run -c release`) do not rebuild each other.
#
# usage: Deploy/build-release.sh    prints the directory of the built programs last
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
flags=(-c release --scratch-path "$root/.build/shipped" --static-swift-stdlib --disable-local-rpath
       -Xswiftc -Xfrontend -Xswiftc -function-sections
       -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
       -Xswiftc -L -Xswiftc "$root/Deploy/link" -Xswiftc -Xclang-linker -Xswiftc -static-libgcc
       -Xswiftc -use-ld=lld
       -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic
       -Xlinker "--symbol-ordering-file=$root/Deploy/startup.order" -Xlinker --no-warn-symbol-ordering)
for product in voipd voipctl voipd-transfer voipd-client; do
    swift build "${flags[@]}" --product "$product" >&2
done
bin=$(swift build "${flags[@]}" --show-bin-path)
# voipctl linked again, from the objects SwiftPM linked it from, as a static PIE
# (-static-executable with clang's -static-pie: rcrt1.o, libc.a, no program interpreter):
# no ld.so loading and looking up libc and libm at each start, and still
# position-independent, its image at a random base like every program of the package
# (it relocates itself, as ld.so relocated it). Of a `voipctl status`, ld.so's loading and
# symbol look-ups were about 150,000 instructions of 717,000 (docs/BENCHMARKS.md, "voipctl
# as a static PIE"). voipctl calls nothing of glibc's that loads modules at run time (NSS,
# iconv, dlopen): voipd, which looks users and groups up, stays dynamically linked. A flag
# SwiftPM is given reaches every compilation, so a product of its own flags would rebuild
# every module the others share: hence a link of its own, here.
swiftc -emit-executable -module-name voipctl -o "$bin/voipctl" @"$bin/voipctl.product/Objects.LinkFileList" -L "$bin" \
    -static-executable -use-ld=lld -Xclang-linker -static-pie \
    -Xlinker --gc-sections -Xlinker --defsym -Xlinker main=voipctl_main \
    -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic \
    -Xlinker "--symbol-ordering-file=$root/Deploy/startup.order" -Xlinker --no-warn-symbol-ordering >&2
echo "$bin"
