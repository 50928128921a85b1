#!/bin/sh
# run-kamailio.sh [--udp] [--no-connection-reuse] [--max-expires SECONDS] PORT RUNDIR
#
# Runs Kamailio in the foreground with voipd's kamailio.cfg (next to this script), listening
# only on tcp:127.0.0.1:PORT, logging to stderr. RUNDIR (created if missing) holds the pid file
# and Kamailio's runtime files. The script execs Kamailio, so the script's PID is Kamailio's:
# stop it with SIGTERM to that PID and wait for it (it exits within ~10 ms).
#
#   Deploy/kamailio/run-kamailio.sh 5070 /tmp/kamailio-5070
#
# Options (kamailio.cfg's variants):
#   --udp                  also on udp:127.0.0.1:PORT (PORT must be free for UDP too)
#   --no-connection-reuse  reach a TCP phone on a new connection to its Contact (its
#                          listening port), not over the connection its REGISTER came on
#   --max-expires SECONDS  grant registrations of at most SECONDS (1..3600; default 3600)
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

usage="usage: $0 [--udp] [--no-connection-reuse] [--max-expires SECONDS] PORT RUNDIR"
defines=
while [ "$#" -gt 0 ]; do
	case "$1" in
		--udp) defines="$defines -A WITH_UDP" ;;
		--no-connection-reuse) defines="$defines -A WITHOUT_CONNECTION_REUSE" ;;
		--max-expires)
			[ "$#" -ge 2 ] || { echo "$usage" >&2; exit 2; }
			case "$2" in
				'' | *[!0-9]*) echo "$0: --max-expires needs a number of seconds, not '$2'" >&2; exit 2 ;;
			esac
			if [ "$2" -lt 1 ] || [ "$2" -gt 3600 ]; then
				echo "$0: --max-expires must be between 1 and 3600" >&2
				exit 2
			fi
			defines="$defines -A MAX_EXPIRES=$2"
			shift
			;;
		-*) echo "$0: unknown option $1" >&2; echo "$usage" >&2; exit 2 ;;
		*) break ;;
	esac
	shift
done
if [ "$#" -ne 2 ]; then
	echo "$usage" >&2
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

# -DD: no fork; -E: log to stderr; -m/-M: shared/private memory in MB. $defines is unquoted
# on purpose: it holds whole "-A NAME[=NUMBER]" words, checked above.
# shellcheck disable=SC2086
exec "$kamailio" -f "$cfg" -A "SIP_PORT=$port" $defines -DD -E \
	-Y "$rundir" -P "$rundir/kamailio.pid" -w "$rundir" -m 64 -M 8
