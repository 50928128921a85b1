import Foundation
import Glibc
import VoipdSystem
import VoipdVocabulary

/// Debian's nginx serving one directory on a free loopback port, in the foreground as one
/// process (`master_process off`) with a configuration written here, started through
/// ``GuardedExec`` so that it ends with the bench; ready once it has written its pid file
/// (after binding its port).
final class NginxUnderTest {
    let port: UInt16
    let directory: TemporaryDirectory
    private let process: PidFd
    private var stopped = false

    var root: String { directory.path + "/www" }
    var baseURL: String { "http://127.0.0.1:\(port)" }

    init(binary: String) throws {
        directory = try TemporaryDirectory()
        let path = directory.path
        for sub in ["www", "logs", "tmp"] { mkdir(path + "/" + sub, 0o755) }
        port = try freeLoopbackPort()
        let configuration = """
            daemon off;
            master_process off;
            pid \(path)/logs/nginx.pid;
            error_log \(path)/logs/error.log;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(path)/tmp/body;
                proxy_temp_path \(path)/tmp/proxy;
                fastcgi_temp_path \(path)/tmp/fastcgi;
                uwsgi_temp_path \(path)/tmp/uwsgi;
                scgi_temp_path \(path)/tmp/scgi;
                default_type application/octet-stream;
                sendfile on;
                server { listen 127.0.0.1:\(port); root \(path)/www; }
            }

            """
        let file = try openFile(path + "/nginx.conf", flags: O_WRONLY | O_CREAT | O_TRUNC)
        try file.writeAll(Array(configuration.utf8))
        let command = GuardedExec.wrap([binary, "-p", path, "-c", path + "/nginx.conf", "-e", path + "/logs/error.log"])
        process = try spawn(SpawnRequest(arguments: command, environment: currentEnvironment()))
        guard try waitForNonEmptyFile(path + "/logs/nginx.pid", milliseconds: 10_000) else {
            stop()
            throw BenchError("nginx did not start: \(ProcFS.read(path + "/logs/error.log") ?? "")")
        }
    }

    deinit {
        stop()
        // nginx makes directories of its own under tmp/; TemporaryDirectory removes files only.
        for sub in ["logs", "tmp", "www"] { try? FileManager.default.removeItem(atPath: directory.path + "/" + sub) }
        unlink(directory.path + "/nginx.conf")
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        try? process.send(SIGTERM)
        if (try? waitReadable(process.descriptor.rawValue, milliseconds: 5000)) != true { try? process.send(SIGKILL) }
        _ = try? process.waitForExit()
    }
}

/// Waits, woken by inotify on its directory, until `path` exists and is not empty.
func waitForNonEmptyFile(_ path: String, milliseconds: Int32) throws -> Bool {
    let watch = inotify_init1(Int32(IN_CLOEXEC))
    guard watch >= 0 else { throw Errno.current("inotify_init1") }
    defer { close(watch) }
    guard inotify_add_watch(watch, parentDirectory(path), UInt32(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO)) >= 0 else {
        throw Errno.current("inotify_add_watch")
    }
    let end = MonotonicInstant.now + .milliseconds(milliseconds)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        var status = stat()
        if stat(path, &status) == 0 && status.st_size > 0 { return true }
        let now = MonotonicInstant.now
        guard now < end else { return false }
        if try waitReadable(watch, milliseconds: Int32(((end - now).seconds * 1000).rounded(.up)) + 1) {
            _ = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
        }
    }
}
