#!/usr/bin/env bash
# Builds the Debian package voipd_VERSION_ARCH.deb from a build, with dpkg-deb alone (no
# debhelper): the tree of Deploy/install.sh, a control file whose Depends come from the
# libraries the programs link, the default configuration as a conffile, and the maintainer
# scripts of Deploy/debian (which do what debhelper's systemd snippets would).
#
# usage: Deploy/build-deb.sh BIN_DIR OUT_DIR
#   BIN_DIR   a release build with the Swift runtime linked in: what Deploy/build-release.sh
#             prints (voipd, voipctl, voipd-transfer, voipd-client built as they ship)
#   OUT_DIR   where the .deb goes; its path is printed last
set -euo pipefail

bin=${1:?usage: build-deb.sh BIN_DIR OUT_DIR}
out=${2:?usage: build-deb.sh BIN_DIR OUT_DIR}
deploy=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
for tool in dpkg-deb dpkg-query objdump; do
    command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (apt-get install dpkg binutils)" >&2; exit 2; }
done

stage=$(mktemp -d /tmp/voipd-deb.XXXXXX)
trap 'rm -rf "$stage"' EXIT
"$deploy/install.sh" "$bin" "$stage/root"
root=$stage/root

version=$("$bin/voipd" --version | awk '{ print $2 }')
architecture=$(dpkg --print-architecture)
multiarch=$("${CC:-cc}" -print-multiarch)

# Depends: the package of each library the programs and libvoipd.so.1 need, at least the
# version built against. A Swift runtime linked in dynamically is refused: it is not a
# Debian package (build with --static-swift-stdlib).
libraries=$(find "$root" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'objdump -p "$1" 2>/dev/null | awk "/NEEDED/ { print \$2 }"' _ {} \; | sort -u)
depends=""
for library in $libraries; do
    case $library in
    libswift*|libFoundation*|libdispatch*|libBlocksRuntime*)
        echo "build-deb: the programs need $library: build with --static-swift-stdlib" >&2
        exit 1 ;;
    esac
    # The copy of this architecture: in its multiarch directory (not /lib32's). awk reads
    # to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail makes fatal.
    path=$(ldconfig -p | awk -v name="$library" -v dir="/$multiarch/" '!found && $1 == name && index($NF, dir) { print $NF; found = 1 }')
    [ -n "$path" ] || { echo "build-deb: $library is not installed here" >&2; exit 1; }
    # dpkg knows the file by its path before /usr was merged, or after.
    owner=$(dpkg-query -S "$path" 2>/dev/null || dpkg-query -S "$(readlink -f "$path")" 2>/dev/null \
            || dpkg-query -S "${path#/usr}" 2>/dev/null || true)
    package=${owner%%:*}
    [ -n "$package" ] || { echo "build-deb: no package owns $path ($library)" >&2; exit 1; }
    package_version=$(dpkg-query -W -f='${Version}' "$package")
    # The upstream version: a later Debian revision still satisfies it.
    upstream=${package_version%-*}
    case ",$depends," in *", $package "*|*",$package "*) continue ;; esac
    depends="${depends:+$depends, }$package (>= $upstream)"
done
# Built-Using: a program with glibc linked in (voipctl, a static PIE: see build-release.sh)
# names the glibc it was built from, as Debian policy (7.8) asks, so that a libc6 security
# update shows which package to rebuild.
built_using=""
for program in "$root"/usr/bin/* "$root"/usr/libexec/voipd/*; do
    [ -f "$program" ] && [ -x "$program" ] || continue
    if objdump -p "$program" 2>/dev/null | grep -q 'file format elf' \
        && ! objdump -p "$program" | grep -q NEEDED; then
        built_using="glibc (= $(dpkg-query -W -f='${source:Version}' libc6))"
        break
    fi
done
# systemd-sysusers and systemd-tmpfiles run in postinst; deb-systemd-helper too.
depends="$depends, systemd | systemd-standalone-sysusers | systemd-sysusers, init-system-helpers (>= 1.54)"

install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: voipd
Version: $version
Architecture: $architecture
Maintainer: voipd authors <voipd@localhost>
Installed-Size: $size
Depends: $depends${built_using:+
Built-Using: $built_using}
Section: net
Priority: optional
Description: iOS multitasking model for VoIP apps on Linux
 voipd suspends apps in the background (SIGSTOP), holds their VoIP sockets, resumes
 them when data arrives, and hands the sockets back after a crash or a relaunch, so
 that a suspended softphone still rings. It runs as a systemd service with socket
 activation, a watchdog and the file descriptor store; voipctl controls it.
 .
 This package holds voipd, voipctl, voipd's background-transfer agent, the
 systemd units, the manual, shell completions, and libvoipd for C and C++ apps
 (voipd.h, libvoipd.so.1, libvoipd.a, voipd.pc).
CONTROL
echo /etc/voipd/voipd.json > "$root/DEBIAN/conffiles"
for script in postinst prerm postrm; do
    install -m 0755 "$deploy/debian/$script" "$root/DEBIAN/$script"
done
install -m 0644 "$deploy/debian/copyright" "$root/usr/share/doc/voipd/copyright"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"

package="$out/voipd_${version}_${architecture}.deb"
# gzip: read by every dpkg, and quick (xz takes minutes on 140 MB of programs).
dpkg-deb --root-owner-group -Zgzip --build "$root" "$package" >/dev/null
echo "build-deb: $(dpkg-deb --field "$package" Package Version Depends Built-Using | tr '\n' ' ')"
echo "$package"
