#!/usr/bin/env bash
# Regenerates Deploy/startup.order, the functions voipd runs from exec to READY=1 and its
# first request (and voipctl to its exit), in the order they first run. Deploy/build-release.sh
# hands it to lld (--symbol-ordering-file), which puts them side by side at the front of the
# text: start-up then maps a few hundred KiB of code instead of 64 KiB around each of a
# hundred places in 10 MB. Run it after a change to what start-up does, and commit the file;
# a stale order costs resident memory, never correctness.
#
# It runs the release programs under valgrind's callgrind (copies without debug
# information, which valgrind cannot read from lld's output), against a configuration of
# its own in a temporary directory.
#
# usage: Deploy/startup-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in valgrind callgrind_annotate python3 strip; do
    command -v "$tool" >/dev/null || { echo "startup-order: $tool is missing (apt-get install valgrind python3 binutils)" >&2; exit 2; }
done
bin=$(Deploy/build-release.sh)
work=$(mktemp -d /tmp/voipd-order.XXXXXX)
trap 'rm -rf "$work"' EXIT
for program in voipd voipctl; do strip -g -o "$work/$program" "$bin/$program"; done
echo '{}' > "$work/voipd.json"

python3 - "$work" <<'PYTHON'
import os, signal, socket, subprocess, sys
work = sys.argv[1]
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(work + "/notify.sock")
notify.settimeout(300)
grind = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no"]
daemon = subprocess.Popen(grind + ["--callgrind-out-file=" + work + "/voipd.out", work + "/voipd",
                          "--socket", work + "/voipd.sock", "--config", work + "/voipd.json",
                          "--apps-directory", work + "/apps.d", "--log-level", "warning"],
                          env=dict(os.environ, NOTIFY_SOCKET=work + "/notify.sock"))
try:
    while b"READY=1" not in notify.recv(4096):
        pass
    subprocess.run(grind + ["--callgrind-out-file=" + work + "/voipctl.out", work + "/voipctl",
                   "--socket", work + "/voipd.sock", "status"], check=True, stdout=subprocess.DEVNULL)
finally:
    daemon.send_signal(signal.SIGTERM)
    daemon.wait()
PYTHON

# Each profile's functions in the order callgrind first met them (its fn= and cfn= lines),
# without its recursion marks ('2); voipd's first, then what voipctl adds.
for profile in voipd voipctl; do
    sed -nE "s/^c?fn=\([0-9]+\) ?//p" "$work/$profile.out" | sed -E "s/'[0-9]+\$//" | grep -v '^$'
done | awk '!seen[$0]++' > Deploy/startup.order
echo "Deploy/startup.order: $(wc -l < Deploy/startup.order) functions" >&2
