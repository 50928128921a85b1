// The Swift runtime's two command-line entry points, defined here so that a program
// linked with the Swift standard library's static archive (Deploy/build-release.sh,
// --static-swift-stdlib) does not take the archive's CommandLine.cpp.o, whose only other
// content is a static constructor (`ArgvGrabber`) that runs in every program before main:
// it reads /proc/self/maps with fgets and sscanf to find the stack and walks back from
// `environ` to argv. That was 110,000 of the 830,000 instructions of a `voipctl status`
// (callgrind; docs/BENCHMARKS.md, "Start-up and memory at start"). glibc passes argc and
// argv to every .init_array function, before any Swift code runs: they are kept from there.
//
// The archive's object defines exactly these two symbols (`nm CommandLine.cpp.o`), so the
// linker, which finds them defined here first, never loads it. With the runtime as a shared
// library (debug builds, tests) the runtime's own copies are the ones it calls, and these
// are unused. Same contract as the runtime's: an override, if set, wins.

static char **voipd_argv;
static int voipd_argc;
static char **voipd_override_argv;
static int voipd_override_argc;

static void voipd_keep_argv(int argc, char **argv, char **envp) {
    (void)envp;
    voipd_argc = argc;
    voipd_argv = argv;
}

__attribute__((section(".init_array"), used))
static void (*const voipd_keep_argv_entry)(int, char **, char **) = voipd_keep_argv;

__attribute__((swiftcall, visibility("hidden")))
char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
    if (voipd_override_argv) {
        *outArgLen = voipd_override_argc;
        return voipd_override_argv;
    }
    if (voipd_argv) {
        *outArgLen = voipd_argc;
        return voipd_argv;
    }
    static char *empty[] = { 0 };
    *outArgLen = 0;
    return empty;
}

__attribute__((swiftcall, visibility("hidden")))
void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
    voipd_override_argv = argv;
    voipd_override_argc = argc;
}
