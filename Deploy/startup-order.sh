#!/usr/bin/env bash
# Regenerates Deploy/startup.order, the functions voipd runs from exec to READY=1 (a first start
# and a start with the records it left), then to its first request, and voipctl to its exit,
# in the order they first run. Deploy/build-release.sh hands it to lld (--symbol-ordering-file), which puts them side by side at the front of the
# text: start-up then maps a few hundred KiB of code instead of 64 KiB around each of a
# hundred places in 10 MB. Run it after a change to what start-up does, and commit the file;
# a stale order costs resident memory, never correctness.
#
# The toolchain's archives (the standard library, Foundation) are not built with function
# sections: some of their objects keep all their functions in one .text section, which the
# linker moves whole, wherever the first of its functions in the order says. Those functions
# are listed after the functions of the same stage that have sections of their own, so that
# a 1.6 MB .text (the standard library's) does not land between them: each stage's own
# functions are packed, then the whole sections it touches follow.
#
# It runs the release programs under valgrind's callgrind (copies without debug
# information, which valgrind cannot read from lld's output), against a configuration of
# its own in a temporary directory (Deploy/voipd.json's keys); voipd's profile is cut at its
# first service-manager notification (READY=1).
#
# usage: Deploy/startup-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in valgrind callgrind_annotate python3 strip readelf swiftc; do
    command -v "$tool" >/dev/null || { echo "startup-order: $tool is missing (apt-get install valgrind python3 binutils)" >&2; exit 2; }
done
bin=$(Deploy/build-release.sh)
work=$(mktemp -d /tmp/voipd-order.XXXXXX)
trap 'rm -rf "$work"' EXIT
for program in voipd voipctl; do strip -g -o "$work/$program" "$bin/$program"; done
# The installed configuration (every key decoded, as at an installed start), with this
# directory for what voipd writes.
python3 - "$work" <<'PYTHON'
import json, sys
work = sys.argv[1]
configuration = json.load(open("Deploy/voipd.json"))
configuration.update(socket=work + "/voipd.sock", appsDirectory=work + "/apps.d", stateDirectory=work, logLevel="warning")
json.dump(configuration, open(work + "/voipd.json", "w"))
PYTHON

python3 - "$work" <<'PYTHON'
import os, signal, socket, subprocess, sys
work = sys.argv[1]
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(work + "/notify.sock")
notify.settimeout(300)
grind = ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no"]
# Two starts: the first after an install (no records yet), then one with the records the
# first left (its state file read): every later start's path. The transfer service is not
# in either: with no task in its store it comes up at the first transfer request.
# The first part of each profile (voipd.out.1, again.out.1) ends where READY=1 is sent.
for profile in ["voipd.out", "again.out"]:
    daemon = subprocess.Popen(grind + ["--dump-before=*ServiceNotifierC6notify*", "--callgrind-out-file=" + work + "/" + profile, work + "/voipd",
                              "--socket", work + "/voipd.sock", "--config", work + "/voipd.json",
                              "--apps-directory", work + "/apps.d", "--log-level", "warning"],
                              env=dict(os.environ, NOTIFY_SOCKET=work + "/notify.sock"))
    try:
        while b"READY=1" not in notify.recv(4096):
            pass
        if profile == "voipd.out":
            subprocess.run(grind + ["--callgrind-out-file=" + work + "/voipctl.out", work + "/voipctl",
                           "--socket", work + "/voipd.sock", "status"], check=True, stdout=subprocess.DEVNULL)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
PYTHON

# The functions of each stage in the order callgrind first met them (its fn= and cfn= lines),
# without its recursion marks ('2): voipd to READY=1, the rest of voipd's run, voipctl's.
static=$(dirname "$(swiftc -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["paths"]["runtimeResourcePath"])')")/swift_static/linux
python3 - "$work" "$static" > "$work/startup.order" <<'PYTHON'
import glob, re, subprocess, sys
work, static = sys.argv[1], sys.argv[2]

def functions(profile):
    names = []
    for line in open(profile):
        m = re.match(r"c?fn=\(\d+\) ?(.*)$", line.rstrip("\n"))
        if m and m.group(1):
            names.append(re.sub(r"'\d+$", "", m.group(1)))
    return names

# Functions the archives define only inside a whole-object .text section.
own, whole = set(), set()
for archive in sorted(glob.glob(static + "/*.a")):
    sections = {}
    listing = subprocess.run(["readelf", "-SsW", archive], capture_output=True, text=True, errors="replace").stdout
    for line in listing.splitlines():
        if line.startswith("File: "):
            sections = {}
            continue
        header = re.match(r"\s*\[\s*(\d+)\] (\S+)", line)
        if header:
            sections[header.group(1)] = header.group(2)
            continue
        fields = line.split()
        if len(fields) >= 8 and fields[0].endswith(":") and fields[3] == "FUNC" and fields[6].isdigit():
            (whole if sections.get(fields[6]) == ".text" else own).add(fields[7])
whole -= own

def parts(profile):
    return sorted(glob.glob(work + "/" + profile + ".*"), key=lambda path: int(path.rsplit(".", 1)[1])) + [work + "/" + profile]
starts = [parts("voipd.out"), parts("again.out")]
stages = [[name for start in starts for name in functions(start[0])],
          [name for start in starts for profile in start[1:] for name in functions(profile)],
          functions(work + "/voipctl.out")]
seen = set()
for stage in stages:
    fresh = [name for name in stage if name and not (name in seen or seen.add(name))]
    for name in [name for name in fresh if name not in whole] + [name for name in fresh if name in whole]:
        print(name)
PYTHON
mv "$work/startup.order" Deploy/startup.order
# The order file is no input SwiftPM knows of: the programs built with the old one go, so
# that the next Deploy/build-release.sh links them again.
rm -f "$bin/voipd" "$bin/voipctl" "$bin/voipd-transfer"
echo "Deploy/startup.order: $(wc -l < Deploy/startup.order) functions (run Deploy/build-release.sh to link with it)" >&2
