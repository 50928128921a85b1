#!/usr/bin/env bash
# Installs the voipd .deb on this machine, checks what it installed, removes and purges it,
# and checks that nothing is left behind. Run by CI (.ci/run), as root, on a machine
# without voipd installed: it really installs the package.
#
#   apt-get install ./voipd_*.deb      dependencies resolved by apt
#   systemd-analyze verify             the installed units, as Deploy/check-units.sh accepts
#   voipd --version, voipctl --version the installed programs, the version of the build
#   voipd --check-config               the installed default configuration (the conffile)
#   pkg-config, cc                     a program built against the installed libvoipd runs
#   bash                               the installed completion loads
#   dpkg -r, then dpkg -P              the conffile stays after -r and goes with -P; the file
#                                      lists of /etc, /usr, /lib, /var/lib and /run/voipd are
#                                      the same before the install and after the purge
#
# usage: Deploy/check-deb.sh PATH/voipd_VERSION_ARCH.deb BIN_DIR (the build it was made from)
set -euo pipefail

deb=${1:?usage: check-deb.sh DEB BIN_DIR}
bin=${2:?usage: check-deb.sh DEB BIN_DIR}
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
deploy=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-deb: run as root (it installs the package)" >&2; exit 2; }
if dpkg-query -W -f='${Status}' voipd 2>/dev/null | grep -q installed; then
    echo "check-deb: voipd is installed already; this check needs a machine without it" >&2
    exit 2
fi

scratch=$(mktemp -d /tmp/voipd-check-deb.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failed=0
fail() { echo "check-deb: FAILED: $*" >&2; failed=1; }

# Where a package may leave something. dpkg's and apt's own databases change by design.
snapshot() {
    local roots=() root
    for root in /etc /usr /lib /var/lib /run/voipd; do
        [ -e "$root" ] && roots+=("$root")
    done
    find "${roots[@]}" -xdev \( -path /var/lib/dpkg -o -path /var/lib/apt \) -prune -o -print | sort
}
snapshot > "$scratch/before"

echo "check-deb: installing $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" > "$scratch/apt.log" 2>&1 \
    || { cat "$scratch/apt.log" >&2; fail "apt-get install"; exit 1; }
dpkg-query -W -f='${Status} ${Version}\n' voipd

unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /usr/lib/systemd/system)
"$deploy/check-units.sh" --installed "$unitdir" || fail "the installed units"

expected=$("$bin/voipd" --version)
[ "$(/usr/bin/voipd --version)" = "$expected" ] || fail "installed voipd --version: $(/usr/bin/voipd --version), built: $expected"
/usr/bin/voipctl --version | grep -q "^voipctl ${expected#voipd }$" || fail "installed voipctl --version"
/usr/bin/voipd --check-config --config /etc/voipd/voipd.json || fail "the installed configuration"
# The transfer agent, where voipd looks for it, runs (its libraries resolve) and refuses to
# work without voipd's socket as descriptor 3.
agent_status=0
agent_output=$(/usr/libexec/voipd/voipd-transfer 2>&1) || agent_status=$?
[ "$agent_status" -eq 64 ] && grep -q "descriptor 3 must be a SOCK_SEQPACKET socket" <<< "$agent_output" \
    || fail "the installed voipd-transfer (status $agent_status): $agent_output"
dpkg-query --control-show voipd conffiles | grep -qx /etc/voipd/voipd.json || fail "voipd.json is not a conffile"
getent group voipd >/dev/null || fail "no group voipd (systemd-sysusers in postinst)"
[ -d /run/voipd ] || fail "no /run/voipd (systemd-tmpfiles in postinst)"
[ -L /etc/systemd/system/sockets.target.wants/voipd.socket ] || fail "voipd.socket is not enabled"
for page in voipd.8 voipctl.1 voipd.json.5 voipd-manifest.5 libvoipd.3; do
    [ -f "/usr/share/man/man${page##*.}/$page.gz" ] || fail "no manual page $page"
done
bash -c 'source /usr/share/bash-completion/completions/voipctl && complete -p voipctl' | grep -q _voipctl \
    || fail "the bash completion"

# A C program built against the installed library, with pkg-config, run.
cat > "$scratch/api.c" <<'PROGRAM'
#include <stdio.h>
#include <voipd.h>
int main(void)
{
    voipd *v = NULL;
    int opened = voipd_open(&v, "/nonexistent/voipd.sock");
    printf("api %d, open: %s\n", voipd_api_version(), voipd_strerror(opened));
    return voipd_api_version() == VOIPD_API_VERSION && opened < 0 ? 0 : 1;
}
PROGRAM
# shellcheck disable=SC2046
cc -Wall -Werror -o "$scratch/api" "$scratch/api.c" $(pkg-config --cflags --libs voipd) || fail "building against voipd.pc"
[ -x "$scratch/api" ] && { "$scratch/api" || fail "the program built against libvoipd"; }
readelf -d "$scratch/api" | grep -q 'NEEDED.*libvoipd.so.1' || fail "the program does not link libvoipd.so.1"

echo "check-deb: removing"
dpkg -r voipd > "$scratch/remove.log" 2>&1 || { cat "$scratch/remove.log" >&2; fail "dpkg -r"; }
[ -f /etc/voipd/voipd.json ] || fail "dpkg -r removed the conffile (only a purge should)"
[ ! -e /usr/bin/voipd ] || fail "dpkg -r left /usr/bin/voipd"
echo "check-deb: purging"
dpkg -P voipd > "$scratch/purge.log" 2>&1 || { cat "$scratch/purge.log" >&2; fail "dpkg -P"; }
snapshot > "$scratch/after"
# Adding the group voipd may leave the shadow tools' backups (/etc/group- ...) if there
# were none: they go with the group, which stays.
for file in "$scratch/before" "$scratch/after"; do
    grep -vxE '/etc/(group|gshadow|passwd|shadow)-' "$file" > "$file.kept" || true
done
if ! diff -u "$scratch/before.kept" "$scratch/after.kept" > "$scratch/left"; then
    cat "$scratch/left" >&2
    fail "the purge left files behind (or removed some)"
fi

if [ "$failed" -ne 0 ]; then
    echo "check-deb: FAILED" >&2
    exit 1
fi
echo "check-deb: installed, checked, removed and purged $(basename "$deb"); nothing left behind (the group voipd stays, as Debian keeps system groups)"
