import Foundation
import Glibc
import VoipdSystem

/// Debian's nginx on a free loopback port, with a configuration the test writes: files
/// under `/` (`www`), the same files rate-limited under `/slow/` (for stopping something in
/// the middle), PUT into `/upload/` (the DAV module), and Basic authentication on
/// `/private/`. Run as uid 65534 when the tests run as root (setpriv), in the foreground, one
/// process, stopped by its PID. Its access log records each request's status, Range and
/// If-Range.
final class NginxServer {
    static let binary = "/usr/sbin/nginx"
    static let shouldRun = toolAvailableOrCI(binary) && (getuid() != 0 || toolAvailableOrCI("/usr/bin/setpriv"))
    static let user = "transfer"
    static let password = "s3cret!"

    let directory: String
    let port: UInt16
    let rateLimit: String
    private var process: PidFd?

    var www: String { directory + "/www" }
    var uploads: String { directory + "/www/upload" }
    var accessLog: String { directory + "/logs/access.log" }
    var errorLog: String { directory + "/logs/error.log" }
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// `rateLimit`: nginx's `limit_rate` for `/slow/` (bytes per second, "4m").
    init(rateLimit: String = "4m") throws {
        guard access(Self.binary, X_OK) == 0 else { throw TestFailure("\(Self.binary) is not installed (apt-get install nginx); CI=true requires it") }
        self.rateLimit = rateLimit
        directory = try makeTemporaryDirectory("voipd-nginx")
        for sub in ["www", "www/upload", "www/private", "logs", "tmp"] { mkdir(directory + "/" + sub, 0o755) }
        let listener = try Socket.listenTCP()
        port = try Socket.localPort(listener)
        try listener.close()
        try configuration.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        try "\(Self.user):{PLAIN}\(Self.password)\n".write(toFile: directory + "/htpasswd", atomically: true, encoding: .utf8)
        if getuid() == 0 {
            // Unprivileged: everything nginx writes belongs to its uid.
            for sub in ["www/upload", "logs", "tmp"] { chown(directory + "/" + sub, 65534, 65534) }
            chmod(directory + "/htpasswd", 0o644)
        }
        try start()
    }

    deinit {
        stop()
        removeTree(directory)
    }

    private var configuration: String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(directory)/logs/nginx.pid;
        error_log \(directory)/logs/error.log info;
        events { worker_connections 256; }
        http {
            log_format transfers '$request_method $uri $status $body_bytes_sent range="$http_range" if_range="$http_if_range"';
            access_log \(accessLog) transfers;
            client_body_temp_path \(directory)/tmp/body;
            proxy_temp_path \(directory)/tmp/proxy;
            fastcgi_temp_path \(directory)/tmp/fastcgi;
            uwsgi_temp_path \(directory)/tmp/uwsgi;
            scgi_temp_path \(directory)/tmp/scgi;
            default_type application/octet-stream;
            sendfile on;
            server {
                listen 127.0.0.1:\(port);
                root \(www);
                location /upload/ {
                    dav_methods PUT;
                    create_full_put_path on;
                    client_max_body_size 0;
                }
                location /private/ {
                    auth_basic "transfers";
                    auth_basic_user_file \(directory)/htpasswd;
                }
                location /slow/ {
                    alias \(www)/;
                    limit_rate \(rateLimit);
                }
            }
        }

        """
    }

    /// Starts nginx and waits until it has bound its port (it writes its pid file after).
    func start() throws {
        guard process == nil else { return }
        let pidFile = directory + "/logs/nginx.pid"
        unlink(pidFile)
        var arguments = [Self.binary, "-p", directory, "-c", directory + "/nginx.conf", "-e", errorLog]
        if getuid() == 0 {
            arguments = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + arguments
        }
        let log = try openFile(directory + "/logs/stderr", flags: O_WRONLY | O_CREAT | O_APPEND)
        process = try spawn(SpawnRequest(arguments: arguments, environment: currentEnvironment(),
                                         standardOutput: log.rawValue, standardError: log.rawValue))
        do {
            try waitForFile(pidFile, timeout: 10)
        } catch {
            stop()
            throw TestFailure("nginx did not start: \(ProcFS.read(directory + "/logs/stderr") ?? "") \(ProcFS.read(errorLog) ?? "")")
        }
    }

    /// Stops it (SIGTERM: connections are cut) and reaps it.
    func stop() {
        guard let process = process.take() else { return }
        try? process.send(SIGTERM)
        var poller = pollfd(fd: process.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        if poll(&poller, 1, 10_000) <= 0 { try? process.send(SIGKILL) }
        _ = try? process.waitForExit()
    }

    /// Serves a new file of random bytes at `/name` and returns its SHA-256.
    @discardableResult
    func serve(_ name: String, size: Int) throws -> String {
        let path = www + "/" + name
        try makeRandomFile(path, size: size)
        return try sha256(path)
    }

    /// The access log's lines.
    var requests: [String] { (ProcFS.read(accessLog) ?? "").split(separator: "\n").map(String.init) }
}
