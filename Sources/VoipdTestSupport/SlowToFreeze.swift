/// A program whose freeze the kernel completes late, for tests of a freeze voipd cannot
/// confirm at once: a thread spends nearly all its time in the kernel, populating 256 MiB of
/// fresh memory in one `madvise(MADV_POPULATE_WRITE)` (Linux 5.14) after another, and a
/// freezer's fake signal does not interrupt that, so the thread freezes only as it returns,
/// tens of milliseconds after it was asked to. Run as `python3 -c SCRIPT [FILE]`: once the
/// thread runs it prints "populating", and writes it to FILE if given.
public enum SlowToFreeze {
    public static let python = "/usr/bin/python3"

    public static let script = """
        import ctypes, sys, threading, time
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        size = 256 << 20
        def populate():
            while True:
                region = libc.mmap(None, size, 3, 0x22, -1, 0)
                if libc.madvise(region, size, 23) != 0: raise SystemExit("madvise: errno %d" % ctypes.get_errno())
                libc.munmap(region, size)
        threading.Thread(target=populate, daemon=True).start()
        print("populating", flush=True)
        if len(sys.argv) > 1: open(sys.argv[1], "w").write("populating")
        while True: time.sleep(100)
        """

    /// The command line, with `file` to write to once the thread runs.
    public static func command(writing file: String? = nil) -> [String] {
        [python, "-c", script] + (file.map { [$0] } ?? [])
    }
}
