import Glibc
import Testing

/// Whether this test process, and so every program it starts from the same build, runs
/// under a sanitizer (Tests/Sanitizers/run.sh): the sanitizer's runtime defines its entry
/// point then.
let underSanitizer = dlsym(nil, "__asan_init") != nil || dlsym(nil, "__tsan_init") != nil

/// Why a test measuring resident memory does not run under a sanitizer.
let memoryUnderSanitizer: Comment = "a sanitizer's shadow memory, redzones and quarantine (ASan keeps freed memory on purpose) make resident memory meaningless; the normal suite measures it"
