import Glibc

/// Becomes `user` (supplementary groups from the group database, then the group, then the
/// user: `initgroups`, `setgid`, `setuid`) and executes `arguments` (`execvp`). Used by a
/// root voipd, in a process it has just started, to run an app under the account its
/// manifest names: posix_spawn cannot change credentials itself. Never returns; on failure
/// it says why on stderr and exits with 127.
public func becomeAndExecute(user: String, uid: uid_t, gid: gid_t, arguments: [String]) -> Never {
    func fail(_ what: String) -> Never {
        let message = "voipd: cannot run \(arguments.first ?? "") as \(user): \(what): \(String(cString: strerror(errno)))\n"
        _ = message.withCString { Glibc.write(2, $0, strlen($0)) }
        _exit(127)
    }
    if initgroups(user, gid) != 0 { fail("initgroups") }
    if setgid(gid) != 0 { fail("setgid") }
    if setuid(uid) != 0 { fail("setuid") }
    // Regaining root must be impossible now.
    if uid != 0 && setuid(0) == 0 { fail("privileges still held") }
    let argv = arguments.map { strdup($0) } + [nil]
    execvp(arguments[0], argv)
    fail("execvp")
}

/// This executable's path (`/proc/self/exe`), without the " (deleted)" the kernel appends
/// once the file has been replaced (as by a package upgrade).
public func currentExecutablePath() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path
}
