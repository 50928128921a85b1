import CVoipd
import Glibc

/// Replaces this process's program (`execve(2)`): `program` runs with `arguments` (argv[0]
/// first) and `environment`, keeping the pid and every descriptor that is not close-on-exec.
/// Returns only by throwing, when the kernel refused.
public func executeProgram(_ program: String, arguments: [String], environment: [String]) throws(Errno) -> Never {
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    _ = try valueOrErrno("execve(\(program))") { execve(program, argv, envp) }
    fatalError("execve returned without an error")
}

/// Hands the heap's free memory back to the system (`malloc_trim(0)`): glibc keeps what a
/// burst of allocations freed, full of holes, for the process.
public func releaseFreeHeapMemory() {
    _ = malloc_trim(0)
}
