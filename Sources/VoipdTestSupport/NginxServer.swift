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
    private var process: PidFd?

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
    public init(binary: String = NginxServer.binary, rateLimit: String = "4m", unprivileged: Bool = true,
                wrap: ([String]) -> [String] = { $0 }) throws {
        guard access(binary, X_OK) == 0 else { throw TestFailure("\(binary) is not installed (apt-get install nginx); CI=true requires it") }
        self.rateLimit = rateLimit
        let directory = try makeTemporaryDirectory("voipd-nginx")
        self.directory = directory
        let listener = try Socket.listenTCP()
        port = try Socket.localPort(listener)
        try listener.close()
        var command = [binary, "-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/logs/error.log"]
        if unprivileged && getuid() == 0 {
            command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + command
        }
        self.command = wrap(command)
        for sub in ["www", "www/upload", "www/private", "logs", "tmp"] { mkdir(directory + "/" + sub, 0o755) }
        try openFile(directory + "/nginx.conf", flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array(configuration.utf8))
        try openFile(directory + "/htpasswd", flags: O_WRONLY | O_CREAT | O_TRUNC).writeAll(Array("\(Self.user):{PLAIN}\(Self.password)\n".utf8))
        if unprivileged && getuid() == 0 {
            // Everything nginx writes belongs to its uid.
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

    /// Starts nginx (again, after ``stop()``) and waits until it has bound its port.
    public func start() throws {
        guard process == nil else { return }
        let pidFile = directory + "/logs/nginx.pid"
        unlink(pidFile)
        let log = try openFile(directory + "/logs/stderr", flags: O_WRONLY | O_CREAT | O_APPEND)
        process = try spawn(SpawnRequest(arguments: command, environment: currentEnvironment(),
                                         standardOutput: log.rawValue, standardError: log.rawValue))
        guard try waitForNonEmptyFile(pidFile, until: MonotonicInstant.now + .seconds(10)) else {
            stop()
            throw TestFailure("nginx did not start: \(ProcFS.read(directory + "/logs/stderr") ?? "") \(ProcFS.read(errorLog) ?? "")")
        }
    }

    /// Stops it (SIGTERM: connections are cut; SIGKILL after 10 s) and reaps it.
    public func stop() {
        guard let process = process.take() else { return }
        try? process.send(SIGTERM)
        if (try? waitReadable(process.descriptor, timeoutMilliseconds: 10_000)) != true { try? process.send(SIGKILL) }
        _ = try? process.waitForExit()
    }

    /// The access log's lines.
    public var requests: [String] { (ProcFS.read(accessLog) ?? "").split(separator: "\n").map(String.init) }
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
