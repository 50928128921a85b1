#!/bin/sh
# run-kamailio.sh PORT RUNDIR
#
# Runs Kamailio in the foreground with voipd's kamailio.cfg (next to this script), listening
# only on tcp:127.0.0.1:PORT, logging to stderr. RUNDIR (created if missing) holds the pid file
# and Kamailio's runtime files. The script execs Kamailio, so the script's PID is Kamailio's:
# stop it with SIGTERM to that PID and wait for it (it exits within ~10 ms).
#
#   Deploy/kamailio/run-kamailio.sh 5070 /tmp/kamailio-5070
#
# It accepts connections once it has logged "voipd: kamailio ready". It logs
# "voipd: tcp connection from IP:PORT closed" when a peer's connection ends (that peer's
# registration is then unreachable).
#
# Environment:
#   KAMAILIO      the binary (default /usr/sbin/kamailio)
#   KAMAILIO_CFG  the configuration (default: kamailio.cfg next to this script)
#
# Check the configuration without running it:
#   kamailio -c -f Deploy/kamailio/kamailio.cfg -A SIP_PORT=5070
set -eu

if [ "$#" -ne 2 ]; then
	echo "usage: $0 PORT RUNDIR" >&2
	exit 2
fi
port=$1
rundir=$2
case "$port" in
	'' | *[!0-9]*)
		echo "$0: PORT must be a number, not '$port'" >&2
		exit 2
		;;
esac
if [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
	echo "$0: PORT must be between 1 and 65535" >&2
	exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
kamailio=${KAMAILIO:-/usr/sbin/kamailio}
cfg=${KAMAILIO_CFG:-$here/kamailio.cfg}

mkdir -p "$rundir"

# -DD: no fork; -E: log to stderr; -m/-M: shared/private memory in MB.
exec "$kamailio" -f "$cfg" -A "SIP_PORT=$port" -DD -E \
	-Y "$rundir" -P "$rundir/kamailio.pid" -w "$rundir" -m 64 -M 8
