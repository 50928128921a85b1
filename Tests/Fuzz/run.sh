#!/usr/bin/env bash
# libFuzzer targets over what voipd reads from others (docs/SECURITY.md, "Fuzzing and
# sanitizers"):
#   frame      packets as recvmsg delivers them: header checks, then the body by its type
#   message    message bodies of every type (the JSON), requests decoded as the daemon does
#   config     the configuration file and app manifests, decoded and resolved
#   lifecycle  the lifecycle machine fed input sequences, its invariants checked after each
#
#   Tests/Fuzz/run.sh TARGET SECONDS    build TARGET, fuzz it for SECONDS from its corpus
#   Tests/Fuzz/run.sh all SECONDS       every target in turn (what CI runs)
#   Tests/Fuzz/run.sh TARGET FILE...    run TARGET on saved inputs (a finding, to reproduce it)
#   Tests/Fuzz/run.sh --seeds           rewrite each corpus's seeds from the code's own encoders
#   Tests/Fuzz/run.sh --typecheck       type-check every harness against the debug build
#                                       (`swift build`): seconds, where the fuzz build takes minutes
#
# The code under test is built by SwiftPM with -sanitize=fuzzer,address (coverage
# instrumentation and AddressSanitizer) in .build-fuzz; each target's harness is linked
# against it with swiftc. The checked-in corpus (Tests/Fuzz/corpus/TARGET) is only read: new
# inputs go to a temporary directory, findings to .build-fuzz/findings/TARGET. Exit status 1
# when a target finds anything (a crash, a failed property, a leak, a timeout).
set -euo pipefail
# Swift's own crash handler and AddressSanitizer's get in each other's way; ASan reports.
export SWIFT_BACKTRACE=enable=no
cd "$(dirname "$0")/../.."
fuzz_dir=Tests/Fuzz
harness=$fuzz_dir/Harness
scratch=.build-fuzz
targets=(frame message config lifecycle)
# Temporary files and directories of this run, removed however it ends.
temporary=()
trap 'rm -rf "${temporary[@]}"' EXIT

# Each target's harness files, besides Harness/Common.
sources() {
    case "$1" in
        frame | message) echo "$harness/Protocol/"*.swift "$harness/$1/"*.swift ;;
        config) echo "$harness/config/"*.swift ;;
        # The lifecycle tests' own invariant checker, compiled in rather than copied.
        lifecycle) echo "$harness/lifecycle/"*.swift Tests/VoipdLifecycleTests/Support/Invariants.swift Tests/VoipdLifecycleTests/Support/Step.swift ;;
        *) echo "unknown target $1 (known: ${targets[*]})" >&2; exit 2 ;;
    esac
}

# The modules the harnesses import, and every target they depend on, one a line:
# "c99name module_type source...". Objects are named after the sources (the scratch
# directory may still hold those of sources since removed).
modules() {
    swift package describe --type json | jq -r '
        (.targets | map({key: .name, value: .}) | from_entries) as $all
        | def closure($name): [$name] + ([$all[$name].target_dependencies // [] | .[] | closure(.)] | add // []);
        [closure("VoipdDaemon")] | flatten | unique | .[] | $all[.]
        | "\(.c99name) \(.module_type) \(.sources | map(split("/") | last) | join(" "))"'
}

built=""
build() {
    if [ -z "$built" ]; then
        echo "== building the code under test (release, -sanitize=fuzzer,address) in $scratch"
        # Not `--sanitize=fuzzer --sanitize=address`: the driver keeps only the last of two
        # -sanitize flags, and the code would have no coverage instrumentation.
        local flags=(-c release --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=fuzzer-no-link,address)
        swift build "${flags[@]}" --target VoipdDaemon 2>&1 | tail -1
        built=$(swift build "${flags[@]}" --show-bin-path)
    fi
    local target=$1 binary=$scratch/fuzz-$1
    local objects=() flags=()
    local module kind source sources
    while read -r module kind sources; do
        for source in $sources; do objects+=("$built/$module.build/$source.o"); done
        if [ "$kind" = ClangTarget ]; then
            flags+=(-Xcc "-fmodule-map-file=$built/$module.build/module.modulemap")
        fi
    done < <(modules)
    # shellcheck disable=SC2046
    local files=("$harness/Common/"*.swift $(sources "$target"))
    if [ -x "$binary" ] && [ -z "$(find "${files[@]}" "${objects[@]}" -newer "$binary" | head -1)" ]; then
        return
    fi
    echo "== linking $binary"
    # ld.gold warns about every ASan symbol it cannot export; lld does not.
    swiftc -sanitize=fuzzer,address -parse-as-library -O -g -swift-version 6 -module-name VoipdFuzz -use-ld=lld \
        -I "$built/Modules" "${flags[@]}" "${files[@]}" "${objects[@]}" -o "$binary"
}

# Runs a target for a time and prints what it did; returns 1 on a finding.
fuzz() {
    local target=$1 seconds=$2 binary=$scratch/fuzz-$1
    local corpus=$fuzz_dir/corpus/$target findings=$scratch/findings/$target
    local work log status=0
    work=$(mktemp -d)
    log=$(mktemp)
    temporary+=("$work" "$log")
    rm -rf "$findings"
    mkdir -p "$findings"
    echo "== fuzzing $target for $seconds s from $corpus ($(find "$corpus" -type f | wc -l) inputs)"
    # -timeout: one input taking 10 s is a finding (a hang: each takes micro- to milliseconds,
    # a few hundred at most under ASan on a loaded machine).
    # -rss_limit_mb: memory growing without bound is a finding too.
    local started=$SECONDS
    "$binary" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=1024 \
        -artifact_prefix="$findings/" -print_pcs=0 "$work" "$corpus" >"$log" 2>&1 || status=$?
    local elapsed=$((SECONDS - started))
    # Edges reached by the corpus (the seeds and what this run added), per module: the
    # modules hold more than the target can reach (WireCodec's socket I/O, the encoders of
    # replies, the whole daemon), so these are floors, not percentages of the target's code.
    local modules
    modules=$("$binary" -runs=0 -print_coverage=1 "$work" "$corpus" 2>&1 | awk '
        /^(UN)?COVERED_FUNC:/ {
            split($5, edges, "/")
            if (match($6, /^\$s[0-9]+/)) {
                module = substr($6, RLENGTH + 1, substr($6, 3, RLENGTH - 2) + 0)
                if (module ~ /^Voipd/) { covered[module] += edges[1]; total[module] += edges[2] }
            }
        }
        END { for (m in covered) if (covered[m] > 0) printf "%s %d/%d, ", m, covered[m], total[m] }' | sed 's/, $//')
    local executions rate rss total covered features
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
    total=$(sed -n 's/.*Loaded [0-9]* modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -1)
    covered=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    features=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    echo "$target: ${executions:-?} executions in $elapsed s (${rate:-?}/s), coverage ${covered:-?} of ${total:-?} instrumented edges" \
        "(all modules), ${features:-?} features, $(find "$work" -type f | wc -l) new inputs, peak RSS ${rss:-?} MB"
    echo "$target: edges reached per module: $modules"
    rm -rf "$work"
    if [ "$status" -ne 0 ]; then
        grep -E '^(FINDING|==[0-9]+==ERROR|SUMMARY|Fatal error|.*: Fatal error)' "$log" | head -20 || true
        tail -40 "$log"
        local artifact
        for artifact in "$findings"/*; do
            [ -f "$artifact" ] || continue
            echo "finding $artifact (base64, reproduce with: $0 $target FILE):"
            base64 "$artifact" | head -50
        done
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

# CI runs this right after its first `swift build`, so a change that breaks a harness fails
# there, not after the whole suite and the release and fuzz builds.
typecheck() {
    local built module kind sources target
    local flags=()
    built=$(swift build --show-bin-path)
    while read -r module kind sources; do
        if [ "$kind" = ClangTarget ]; then
            flags+=(-Xcc "-fmodule-map-file=$built/$module.build/module.modulemap")
        fi
    done < <(modules)
    for target in "${targets[@]}"; do
        # shellcheck disable=SC2046
        swiftc -typecheck -parse-as-library -swift-version 6 -module-name VoipdFuzz -I "$built/Modules" "${flags[@]}" \
            "$harness/Common/"*.swift $(sources "$target")
    done
    echo "== the harnesses of ${targets[*]} type-check against $built"
}

seeds() {
    local target
    for target in "${targets[@]}"; do
        build "$target"
        rm -rf "${fuzz_dir:?}/corpus/$target"
        mkdir -p "$fuzz_dir/corpus/$target"
        VOIPD_FUZZ_WRITE_SEEDS=$fuzz_dir/corpus/$target "$scratch/fuzz-$target"
    done
}

case "${1:-}" in
    --seeds) seeds ;;
    --typecheck) typecheck ;;
    all)
        seconds=${2:?"usage: $0 all SECONDS"}
        failed=()
        for target in "${targets[@]}"; do
            build "$target"
            fuzz "$target" "$seconds" || failed+=("$target")
        done
        if [ ${#failed[@]} -gt 0 ]; then
            echo "fuzzing found something in: ${failed[*]}"
            exit 1
        fi
        ;;
    "" | -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    *)
        target=$1
        shift
        sources "$target" >/dev/null
        build "$target"
        if [[ "${1:-}" =~ ^[1-9][0-9]*$ ]]; then
            fuzz "$target" "$1"
        else
            "$scratch/fuzz-$target" "$@"
        fi
        ;;
esac
