import Glibc
import VoipdSystem
import VoipdVocabulary

/// Debian's nginx on a free loopback port, with a configuration written here: files under
/// `/` (``www``), the same files rate-limited under `/slow/` (for stopping something in the
/// middle), PUT into `/upload/` (the DAV module), and Basic authentication on `/private/`
/// (``user``, ``password``). In the foreground as one process (`master_process off`),
/// stopped by its pid; ready once it has written its pid file (after binding its port). Its
/// access log records each request's status, Range and If-Range.
public final class NginxServer {
    public static let binary = "/usr/sbin/nginx"
    /// Whether the tests that need it run: it is installed (and setpriv, for root), or CI
    /// requires them.
    public static let shouldRun = toolAvailableOrCI(binary) && (getuid() != 0 || toolAvailableOrCI("/usr/bin/setpriv"))
    public static let user = "transfer"
    public static let password = "s3cret!"

    public let directory: String
    public let port: UInt16
    public let rateLimit: String
    private let command: [String]
    private var process: TestProcess?

    public var www: String { directory + "/www" }
    public var uploads: String { directory + "/www/upload" }
    public var accessLog: String { directory + "/logs/access.log" }
    public var errorLog: String { directory + "/logs/error.log" }
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// - Parameters:
    ///   - rateLimit: nginx's `limit_rate` for `/slow/` (bytes per second, "4m").
    ///   - unprivileged: when run as root, nginx runs as uid 65534 (setpriv), and everything
    ///     it writes belongs to that uid.
    ///   - wrap: makes the command line that starts nginx (a benchmark's guard that ends it
    ///     with the benchmark).
    ///   - pickPort: the port to try (a free loopback port by default). nginx binds it
    ///     itself: on a port another process took after it was found free, nginx ends
    ///     (after its own retries, about 2.5 s), and starts again on another.
    public init(binary: String = NginxServer.binary, rateLimit: String = "4m", unprivileged: Bool = true,
                wrap: ([String]) -> [String] = { $0 }, pickPort: () throws -> UInt16 = { try freeLoopbackPort() }) throws {
        guard access(binary, X_OK) == 0 else { throw TestFailure("\(binary) is not installed (apt-get install nginx); CI=true requires it") }
        self.rateLimit = rateLimit
        let directory = try makeTemporaryDirectory("voipd-nginx")
        self.directory = directory
        var command = [binary, "-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/logs/error.log"]
        if unprivileged && getuid() == 0 {
            command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + command
        }
        let wrapped = wrap(command)
        self.command = wrapped
        do {
            for sub in ["www", "www/upload", "www/private", "logs", "tmp"] { mkdir(directory + "/" + sub, 0o755) }
            try openFile(directory + "/htpasswd", flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array("\(Self.user):{PLAIN}\(Self.password)\n".utf8))
            if unprivileged && getuid() == 0 {
                // Everything nginx writes belongs to its uid.
                for sub in ["www/upload", "logs", "tmp"] { chown(directory + "/" + sub, 65534, 65534) }
                chmod(directory + "/htpasswd", 0o644)
            }
            let (bound, started) = try startOnFreePort("nginx", pickPort: pickPort) { port in
                try openFile(directory + "/nginx.conf", flags: O_WRONLY | O_CREAT | O_TRUNC)
                    .writeAll(Array(Self.configuration(directory: directory, port: port, rateLimit: rateLimit).utf8))
                return try Self.launch(wrapped, in: directory, port: port).map { (port, $0) }
            }
            port = bound
            process = started
        } catch {
            removeTree(directory)
            throw error
        }
    }

    deinit {
        stop()
        removeTree(directory)
    }

    private static func configuration(directory: String, port: UInt16, rateLimit: String) -> String {
        let www = directory + "/www"
        return """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(directory)/logs/nginx.pid;
        error_log \(directory)/logs/error.log info;
        events { worker_connections 256; }
        http {
            log_format transfers '$request_method $uri $status $body_bytes_sent range="$http_range" if_range="$http_if_range"';
            access_log \(directory)/logs/access.log transfers;
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

    /// Starts nginx again after ``stop()``, on its port, and waits until it has bound it.
    /// - Throws: if another process took the port while nginx was stopped (nothing but
    ///   another port would help, and a test restarting a server expects the same address).
    public func start() throws {
        guard process == nil else { return }
        switch try Self.launch(command, in: directory, port: port) {
        case .bound(let started): process = started
        case .addressInUse(let said): throw TestFailure("nginx could not bind its port \(port) again (another process took it while nginx was stopped): \(said)")
        }
    }

    /// One start of nginx on `port` (in its configuration): bound once it has written its pid
    /// file, which it does after binding; a collision if it ends first saying the address is
    /// in use.
    private static func launch(_ command: [String], in directory: String, port: UInt16) throws -> PortBindOutcome<TestProcess> {
        let pidFile = directory + "/logs/nginx.pid"
        let stderr = directory + "/logs/stderr"
        unlink(pidFile)
        let since = fileSize(stderr) ?? 0
        let log = try openFile(stderr, flags: O_WRONLY | O_CREAT | O_APPEND)
        let process = try TestProcess(command, output: log.rawValue)
        switch try waitForContent(of: pidFile, whileRunning: process.pidfd.descriptor, until: MonotonicInstant.now + .seconds(10), { !$0.isEmpty }) {
        case .satisfied:
            return .bound(process)
        case .timedOut:
            process.terminate(grace: .seconds(10))
            throw TestFailure("nginx did not bind port \(port) within 10 s: \(fileText(stderr, from: since)) \(ProcFS.read(directory + "/logs/error.log") ?? "")")
        case .ended:
            let status = try process.waitForExit(.seconds(10))
            let said = fileText(stderr, from: since)
            guard reportsAddressInUse(exitStatus: nil, log: said) else { throw TestFailure("nginx did not start (\(status)): \(said)") }
            return .addressInUse(addressInUseLine(in: said) ?? "\(status)")
        }
    }

    /// Stops it (SIGTERM: connections are cut; SIGKILL after 10 s) and reaps it.
    public func stop() {
        process.take()?.terminate(grace: .seconds(10))
    }

    /// The access log's lines.
    public var requests: [String] { (ProcFS.read(accessLog) ?? "").split(separator: "\n").map(String.init) }

    /// The access log's lines once `count` of them satisfy `predicate` (within `timeout`;
    /// the lines as they are if not). nginx writes a request's line after the response has
    /// gone to the kernel, so a client can have every byte, and a test hear of it, before the
    /// line is there: ask for what the test is about to look for.
    public func requests(once count: Int = 1, match predicate: (String) -> Bool, timeout: Duration = .seconds(10)) throws -> [String] {
        _ = try waitForContent(of: accessLog, until: MonotonicInstant.now + timeout) { text in
            text.split(separator: "\n").count { predicate(String($0)) } >= count
        }
        return requests
    }
}

extension NginxServer {
    /// Serves a new file of random bytes at `/name` and returns its SHA-256.
    @discardableResult
    public func serve(_ name: String, size: Int) throws -> String {
        let path = www + "/" + name
        try makeRandomFile(path, size: size)
        return try sha256(path)
    }
}
