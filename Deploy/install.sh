#!/usr/bin/env bash
# Installs voipd from a build into a directory tree, laid out as a Linux distribution lays
# out a package: the tree Deploy/build-deb.sh packs into the .deb, which the tests also
# build from the debug binaries and compile a C program against.
#
# usage: Deploy/install.sh BIN_DIR DESTDIR
#   BIN_DIR   `swift build --show-bin-path`: voipd, voipctl, voipd-transfer and libvoipd-client.a
#   DESTDIR   the root to install under (a staging directory)
# The layout follows the machine's own: systemd.pc gives the unit, sysusers.d and
# tmpfiles.d directories (Debian 12: /lib/systemd/system), the C compiler the multiarch
# library directory. PREFIX (default /usr) moves the rest.
set -euo pipefail

bin=${1:?usage: install.sh BIN_DIR DESTDIR}
dest=${2:?usage: install.sh BIN_DIR DESTDIR}
bin=$(cd "$bin" && pwd)
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
deploy=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$deploy")
cc=${CC:-cc}

prefix=${PREFIX:-/usr}
systemd_dir() { pkg-config --variable="$1" systemd 2>/dev/null || echo "$2"; }
unitdir=$(systemd_dir systemdsystemunitdir /usr/lib/systemd/system)
sysusersdir=$(systemd_dir sysusersdir /usr/lib/sysusers.d)
tmpfilesdir=$(systemd_dir tmpfilesdir /usr/lib/tmpfiles.d)
multiarch=$("$cc" -print-multiarch 2>/dev/null || true)
libdir=$prefix/lib${multiarch:+/$multiarch}
includedir=$prefix/include
mandir=$prefix/share/man
docdir=$prefix/share/doc/voipd

for file in voipd voipctl voipd-transfer libvoipd-client.a; do
    [ -e "$bin/$file" ] || { echo "install.sh: $bin/$file is missing (swift build first)" >&2; exit 2; }
done
# One source for the version: the program's own.
version=$("$bin/voipd" --version | awk '{ print $2 }')
[ -n "$version" ] || { echo "install.sh: voipd --version printed no version" >&2; exit 1; }

# The programs, without their debug information (the symbol table stays, for backtraces).
install -d "$dest$prefix/bin"
for program in voipd voipctl; do
    install -m 0755 "$bin/$program" "$dest$prefix/bin/$program"
    strip --strip-debug "$dest$prefix/bin/$program"
done
# The transfer agent voipd starts for background transfers (it alone links
# FoundationNetworking), where voipd looks for it: $prefix/libexec/voipd.
install -d "$dest$prefix/libexec/voipd"
install -m 0755 "$bin/voipd-transfer" "$dest$prefix/libexec/voipd/voipd-transfer"
strip --strip-debug "$dest$prefix/libexec/voipd/voipd-transfer"

# systemd: the units, pointing at the installed programs and documents.
install -d "$dest$unitdir" "$dest$sysusersdir" "$dest$tmpfilesdir"
for unit in voipd.service voipd.socket voipd-stats.service voipd-stats.timer; do
    sed -e "s|/usr/local/bin/|$prefix/bin/|g" -e "s|file:///usr/local/share/doc/voipd/|file://$docdir/|g" \
        "$deploy/$unit" > "$dest$unitdir/$unit"
    chmod 0644 "$dest$unitdir/$unit"
done
install -m 0644 "$deploy/sysusers.d/voipd.conf" "$dest$sysusersdir/voipd.conf"
install -m 0644 "$deploy/tmpfiles.d/voipd.conf" "$dest$tmpfilesdir/voipd.conf"

# The configuration, every key at its default; manifests go beside it.
install -d "$dest/etc/voipd/apps.d"
install -m 0644 "$deploy/voipd.json" "$dest/etc/voipd/voipd.json"

# The manual, compressed as Debian ships it (no name or time stamp in the gzip header).
for page in "$deploy"/man/*.[1-8]; do
    name=${page##*/}
    install -d "$dest$mandir/man${name##*.}"
    gzip -9n < "$page" > "$dest$mandir/man${name##*.}/$name.gz"
    chmod 0644 "$dest$mandir/man${name##*.}/$name.gz"
done

# Shell completions, made by voipctl itself from its table of verbs.
install -d "$dest$prefix/share/bash-completion/completions" "$dest$prefix/share/zsh/vendor-completions" \
    "$dest$prefix/share/fish/vendor_completions.d"
"$bin/voipctl" completion bash > "$dest$prefix/share/bash-completion/completions/voipctl"
"$bin/voipctl" completion zsh > "$dest$prefix/share/zsh/vendor-completions/_voipctl"
"$bin/voipctl" completion fish > "$dest$prefix/share/fish/vendor_completions.d/voipctl.fish"
chmod 0644 "$dest$prefix/share/bash-completion/completions/voipctl" "$dest$prefix/share/zsh/vendor-completions/_voipctl" \
    "$dest$prefix/share/fish/vendor_completions.d/voipctl.fish"

# libvoipd: the header, the archive swift build made, a shared library linked from the
# same objects (soname libvoipd.so.1, only voipd_* exported, versioned VOIPD_1 and, for API 2's
# functions, VOIPD_1.2), and
# voipd.pc.
install -d "$dest$includedir" "$dest$libdir/pkgconfig"
install -m 0644 "$root/Sources/libvoipd/include/voipd.h" "$dest$includedir/voipd.h"
install -m 0644 "$bin/libvoipd-client.a" "$dest$libdir/libvoipd.a"
strip --strip-debug "$dest$libdir/libvoipd.a"
"$cc" -shared -o "$dest$libdir/libvoipd.so.1" -Wl,-soname,libvoipd.so.1 \
    -Wl,--version-script="$deploy/libvoipd/libvoipd.map" -Wl,-z,relro -Wl,-z,now -Wl,--as-needed \
    -Wl,--whole-archive "$bin/libvoipd-client.a" -Wl,--no-whole-archive
strip --strip-unneeded "$dest$libdir/libvoipd.so.1"
chmod 0644 "$dest$libdir/libvoipd.so.1"
ln -sf libvoipd.so.1 "$dest$libdir/libvoipd.so"
sed -e "s|@prefix@|$prefix|g" -e "s|@libdir@|$libdir|g" -e "s|@includedir@|$includedir|g" \
    -e "s|@docdir@|$docdir|g" -e "s|@version@|$version|g" \
    "$deploy/libvoipd/voipd.pc.in" > "$dest$libdir/pkgconfig/voipd.pc"
chmod 0644 "$dest$libdir/pkgconfig/voipd.pc"

# Documents, and the example softphone's manifest, account and home as examples.
install -d "$dest$docdir/examples"
install -m 0644 "$root/README.md" "$root"/docs/*.md "$dest$docdir/"
install -m 0644 "$deploy/README.md" "$dest$docdir/DEPLOY.md"
install -m 0644 "$deploy/apps.d/softphone.json" "$dest$docdir/examples/softphone.json"
install -m 0644 "$deploy/apps.d/baresip.json" "$dest$docdir/examples/baresip.json"
install -m 0644 "$deploy/sysusers.d/voip-softphone.conf" "$dest$docdir/examples/sysusers-voip-softphone.conf"
install -m 0644 "$deploy/tmpfiles.d/voip-softphone.conf" "$dest$docdir/examples/tmpfiles-voip-softphone.conf"

echo "install.sh: voipd $version installed under $dest ($prefix, units in $unitdir, library in $libdir)"
