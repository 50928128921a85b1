#!/usr/bin/env bash
# The whole test suite under a sanitizer (docs/SECURITY.md, "Fuzzing and sanitizers"):
#   Tests/Sanitizers/run.sh address   AddressSanitizer (with LeakSanitizer), in .build-asan
#   Tests/Sanitizers/run.sh thread    ThreadSanitizer, in .build-tsan
#
# Every program the tests start from this build (voipd, voipctl, the test apps, the softphone)
# carries the sanitizer too. Each process writes its reports to a file of its own (log_path),
# and any report fails the run, also one from a process whose test did not look. The tests
# that cannot run under a sanitizer say why (`underSanitizer` in the test targets' Support).
# SANITIZER_KEEP=1 keeps the test log and the reports of a failed run.
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
    # Built to recover: a process goes on after a report (halt_on_error=0 below), so one run
    # shows every finding, not only the first of each process.
    address) scratch=.build-asan recover=(-Xswiftc -sanitize-recover=address -Xcc -fsanitize-recover=address) ;;
    thread) scratch=.build-tsan recover=() ;;
    *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
sanitizer=$1
flags=(--sanitize="$sanitizer" --scratch-path "$scratch" "${recover[@]}")
reports=$(mktemp -d)
log=$(mktemp)
# Processes the tests run as another uid (setpriv) write their reports here too.
chmod 1777 "$reports"
trap 'rm -rf "$reports" "$log"' EXIT

started=$SECONDS
if ! swift build --build-tests "${flags[@]}" >"$log" 2>&1; then
    tail -30 "$log"
    exit 1
fi
built=$SECONDS
# The toolchain's own leaks at exit (XCTest's test-suite objects) are not ours:
# Tests/Sanitizers/lsan.supp names them.
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:halt_on_error=0"
export LSAN_OPTIONS="suppressions=$PWD/Tests/Sanitizers/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=0:second_deadlock_stack=1"
status=0
swift test --skip-build "${flags[@]}" >"$log" 2>&1 || status=$?
grep -E -A4 "^✘.*recorded an issue" "$log" | head -80 || true
grep -E "Test run with" "$log" || tail -20 "$log"
# What did not run, and why (under a sanitizer, or a tool missing without CI=true).
skipped=$(grep -E '^➜ Test .* skipped' "$log" || true)
if [ -n "$skipped" ]; then
    echo "$(echo "$skipped" | wc -l) tests skipped:"
    echo "$skipped" | cut -c1-200
fi
echo "$sanitizer: build $((built - started)) s, tests $((SECONDS - built)) s"
found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
    echo "$(echo "$found" | wc -l) sanitizer reports:"
    for report in $found; do
        echo "== $report"
        head -60 "$report"
    done
    status=1
fi
if [ "$status" -ne 0 ] && [ -n "${SANITIZER_KEEP:-}" ]; then
    trap - EXIT
    echo "kept: the test log $log, the reports in $reports"
fi
exit "$status"
