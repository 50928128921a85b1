import Glibc
import Testing

/// Whether this test process, and so every program it starts from the same build, runs
/// under a sanitizer (Tests/Sanitizers/run.sh): the sanitizer's runtime defines its entry
/// point then.
let underSanitizer = dlsym(nil, "__asan_init") != nil || dlsym(nil, "__tsan_init") != nil

/// Why a test measuring resident memory does not run under a sanitizer.
let memoryUnderSanitizer: Comment = "a sanitizer's shadow memory, redzones and quarantine (ASan keeps freed memory on purpose) make resident memory meaningless; the normal suite measures it"

/// Why a test of hibernation's memory limit does not run under a sanitizer.
let hibernationUnderSanitizer: Comment = "the app's dirty memory includes the sanitizer runtime's shadow and metadata (a 10 MB test app is about 53 MB dirty under ThreadSanitizer), over hibernation's 16 MB limit; the normal suite runs this"
