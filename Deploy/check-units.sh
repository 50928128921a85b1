#!/usr/bin/env bash
# Checks Deploy/'s systemd files with systemd's own tools, without installing anything:
#   systemd-analyze verify      the units (ExecStart= pointed at the given binaries);
#   systemd-analyze security    voipd.service's exposure stays at most $VOIPD_EXPOSURE_MAX;
#   systemd-sysusers, systemd-tmpfiles   applied to a scratch root directory.
# A directive the installed systemd does not know is accepted only when the comment just
# above it names the version that needs it ("systemd >= 254"); any other warning or error
# fails. Used by .ci/run and by the tests (DeployTests).
#
# usage: Deploy/check-units.sh BIN_DIR     (the directory holding voipd and voipctl)
#        Deploy/check-units.sh --installed UNIT_DIR
#                                         (the units a package installed there, as they are:
#                                         only verify and security; Deploy/check-deb.sh)
set -euo pipefail

deploy=$(cd "$(dirname "$0")" && pwd)
exposure_max=${VOIPD_EXPOSURE_MAX:-50}   # systemd-analyze's scale: 50 is "5.0"
units=(voipd.service voipd.socket voipd-stats.service voipd-stats.timer)
installed=""
if [ "${1:-}" = --installed ]; then
    installed=${2:?usage: check-units.sh --installed UNIT_DIR}
else
    bin=${1:?usage: check-units.sh BIN_DIR (the directory of the voipd and voipctl binaries)}
    bin=$(cd "$bin" && pwd)
fi

for tool in systemd-analyze systemd-sysusers systemd-tmpfiles; do
    command -v "$tool" >/dev/null || { echo "check-units: $tool is not installed (apt-get install systemd)" >&2; exit 2; }
done
if [ -z "$installed" ]; then
    for program in voipd voipctl; do
        [ -x "$bin/$program" ] || { echo "check-units: $bin/$program is not an executable (swift build first)" >&2; exit 2; }
    done
fi

scratch=$(mktemp -d /tmp/voipd-units.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/units" "$scratch/root/etc"
if [ -n "$installed" ]; then
    unit_dir=$installed
else
    unit_dir=$scratch/units
    for unit in "${units[@]}"; do
        # The same file, line for line, with the installed paths replaced by the built ones.
        sed -e "s|/usr/local/bin/voipd |$bin/voipd |g" -e "s|/usr/local/bin/voipctl |$bin/voipctl |g" \
            "$deploy/$unit" > "$scratch/units/$unit"
    done
fi

# Whether line $2 of unit $1 sets a directive marked with the version that needs it: the
# comment block directly above it says "systemd >= N".
marked_as_newer() {
    awk -v target="$2" '
        NR < target && /^#/ { block = block $0 "\n"; next }
        NR < target         { block = ""; next }
        NR == target        { exit !(block ~ /systemd >= [0-9]+/) }
    ' "$deploy/$1"
}

failed=0
status=0
output=$(cd "$unit_dir" && systemd-analyze verify --man=no "${units[@]/#/$unit_dir/}" 2>&1) || status=$?
[ -n "$output" ] && printf '%s\n' "$output"
if [ "$status" -ne 0 ]; then
    echo "check-units: systemd-analyze verify failed (exit $status)" >&2
    failed=1
fi
while IFS= read -r line; do
    [ -z "$line" ] && continue
    if [[ $line =~ ^.*/([^/:]+):([0-9]+):\ Unknown\ key\ \'([A-Za-z]+)\' ]]; then
        unit=${BASH_REMATCH[1]} number=${BASH_REMATCH[2]} key=${BASH_REMATCH[3]}
        if marked_as_newer "$unit" "$number"; then
            echo "check-units: $unit:$number: $key needs a newer systemd than $(systemd-analyze --version | head -1) (marked): accepted"
            continue
        fi
        echo "check-units: $unit:$number: $key is unknown to this systemd and not marked with the version that needs it" >&2
    else
        echo "check-units: unexpected: $line" >&2
    fi
    failed=1
done <<< "$output"

# The sandbox must not loosen unnoticed.
security=$(cd "$unit_dir" && systemd-analyze security --offline=yes --threshold="$exposure_max" "$unit_dir/voipd.service" 2>&1) || {
    printf '%s\n' "$security" | tail -3 >&2
    echo "check-units: voipd.service's exposure is above ${exposure_max}/100" >&2
    failed=1
}
printf '%s\n' "$security" | grep -F "Overall exposure level" || true

if [ -n "$installed" ]; then
    if [ "$failed" -ne 0 ]; then
        echo "check-units: FAILED" >&2
        exit 1
    fi
    echo "check-units: the units installed in $installed are valid"
    exit 0
fi

# The accounts and directories, created under a scratch root: voipd's, then the example
# softphone's.
if ! systemd-sysusers --root="$scratch/root" "$deploy/sysusers.d/voipd.conf" "$deploy/sysusers.d/voip-softphone.conf" 2>&1; then
    echo "check-units: systemd-sysusers rejected sysusers.d/voipd.conf or voip-softphone.conf" >&2
    failed=1
elif ! grep -q '^voipd:' "$scratch/root/etc/group" || ! grep -q '^voip-softphone:' "$scratch/root/etc/passwd"; then
    echo "check-units: sysusers.d made no voipd group or no voip-softphone user" >&2
    failed=1
fi
tmpfiles=$(systemd-tmpfiles --root="$scratch/root" --create "$deploy/tmpfiles.d/voipd.conf" "$deploy/tmpfiles.d/voip-softphone.conf" 2>&1) || true
# Only root may give the directories their owners; the rest is checked all the same.
[ "$(id -u)" -eq 0 ] || tmpfiles=$(printf '%s\n' "$tmpfiles" | grep -v 'fchownat() of .* failed: Operation not permitted' || true)
if [ -n "$tmpfiles" ] || [ ! -d "$scratch/root/run/voipd" ] || [ ! -d "$scratch/root/etc/voipd/apps.d" ] \
    || [ ! -d "$scratch/root/var/lib/voip-softphone" ]; then
    printf '%s\n' "$tmpfiles" >&2
    echo "check-units: systemd-tmpfiles rejected tmpfiles.d/voipd.conf or voip-softphone.conf" >&2
    failed=1
fi

if [ "$failed" -ne 0 ]; then
    echo "check-units: FAILED" >&2
    exit 1
fi
echo "check-units: ${units[*]}, sysusers.d and tmpfiles.d (voipd, voip-softphone) are valid"
