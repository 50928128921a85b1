import Testing
import VoipdTransfers

/// Everything an app sends is checked before it becomes a task.
@Suite("Validation of requests")
struct ValidationTests {
    private func rejection(_ spec: TransferTaskSpec) -> TransferRequestError.Code? {
        do {
            try TransferValidation.validate(spec)
            return nil
        } catch {
            return error.code
        }
    }

    private let good = TransferTaskSpec.download("https://example.org/a.bin", to: "/home/u/a.bin")

    @Test("an http or https URL to an absolute destination is accepted")
    func accepted() {
        #expect(rejection(good) == nil)
        #expect(rejection(.download("http://127.0.0.1:8080/x?y=1", to: "/x")) == nil)
        #expect(rejection(.upload("/home/u/photo.jpg", to: "HTTPS://example.org/up", method: "POST")) == nil)
    }

    @Test("only http and https: ftp, file, data and others are refused", arguments: [
        "ftp://example.org/a", "file:///etc/passwd", "data:text/plain,hi", "gopher://x/", "ws://example.org/",
    ])
    func schemes(url: String) {
        #expect(rejection(.download(url, to: "/home/u/a")) == .unsupportedScheme)
    }

    @Test("URLs without a host, with credentials, or too long are refused", arguments: [
        "not a url", "https:///path", "https://user:secret@example.org/a", "https://example.org/" + String(repeating: "a", count: 9000),
    ])
    func badURLs(url: String) {
        #expect(rejection(.download(url, to: "/home/u/a")) == .invalidURL)
    }

    @Test("destinations and sources must be plain absolute paths", arguments: [
        "relative/path", "/home/u/../root/x", "/home/u/./x", "/home//x", "/home/u/", "", "/a\u{0}b",
    ])
    func paths(path: String) {
        #expect(rejection(.download("https://example.org/a", to: path)) == .invalidPath)
        #expect(rejection(.upload(path, to: "https://example.org/a")) == .invalidPath)
    }

    @Test("a destination name too long for its partial file's name is refused")
    func longName() {
        #expect(rejection(.download("https://example.org/a", to: "/h/" + String(repeating: "n", count: 201))) == .invalidPath)
        #expect(rejection(.download("https://example.org/a", to: "/h/" + String(repeating: "n", count: 200))) == nil)
    }

    @Test("methods are tokens")
    func methods() {
        #expect(rejection(TransferTaskSpec(kind: good.kind, request: TransferRequest(url: good.request.url, method: "GET /x"))) == .invalidMethod)
        #expect(rejection(TransferTaskSpec(kind: good.kind, request: TransferRequest(url: good.request.url, method: ""))) == .invalidMethod)
        #expect(rejection(TransferTaskSpec(kind: good.kind, request: TransferRequest(url: good.request.url, method: "PROPFIND"))) == nil)
    }

    @Test("headers: no control characters, no header voipd sets itself, bounded count and size")
    func headers() {
        func with(_ headers: HTTPHeaders) -> TransferRequestError.Code? {
            rejection(TransferTaskSpec(kind: good.kind, request: TransferRequest(url: good.request.url, headers: headers)))
        }
        #expect(with(["Authorization": "Bearer abc", "X-Upload-ID": "42"]) == nil)
        #expect(with(["X-Evil": "a\r\nHost: other"]) == .invalidHeader)
        #expect(with(["Bad Name": "x"]) == .invalidHeader)
        for reserved in ["Range", "if-range", "Content-Length", "Transfer-Encoding", "Host", "Connection"] {
            #expect(with(HTTPHeaders([HTTPHeader(reserved, "1")])) == .invalidHeader, "\(reserved)")
        }
        #expect(with(HTTPHeaders((0..<65).map { HTTPHeader("X-\($0)", "v") })) == .invalidHeader)
        #expect(with(HTTPHeaders((0..<5).map { HTTPHeader("X-\($0)", String(repeating: "v", count: 8000)) })) == .invalidHeader)
    }

    @Test("priority is between 0 and 1; timeouts are positive and at most a year")
    func values() {
        var spec = good
        for priority in [-0.1, 1.1, .nan, .infinity] {
            spec.priority = priority
            #expect(rejection(spec) == .invalidValue)
        }
        spec.priority = 1
        #expect(rejection(spec) == nil)
        spec.timeoutIntervalForResource = 0
        #expect(rejection(spec) == .invalidValue)
        spec.timeoutIntervalForResource = 400 * 24 * 3600
        #expect(rejection(spec) == .invalidValue)
        spec.timeoutIntervalForResource = 60
        spec.timeoutIntervalForRequest = -1
        #expect(rejection(spec) == .invalidValue)
    }

    @Test("the engine refuses bad requests and changes nothing")
    func engineRefuses() {
        var driver = Driver.withOpenSession()
        let step = driver.feed(.createTask(Driver.session, .download("file:///etc/shadow", to: "/home/phone/x")))
        #expect(step.rejection == .unsupportedScheme)
        #expect(step.actions.isEmpty)
        #expect(driver.engine.tasks.isEmpty)
    }

    @Test("tasks need an open session of the app; unknown tasks are refused")
    func unknownSession() {
        var driver = Driver.withOpenSession()
        let other = TransferSessionID(app: "other", identifier: "bg")
        #expect(driver.feed(.createTask(other, .download("https://x/a", to: "/a"))).rejection == .unknownSession)
        let (id, _) = driver.download("a")
        // Another app cannot touch the task by naming its number.
        #expect(driver.feed(.cancelTask(other, id)).rejection == .unknownTask)
        #expect(driver.feed(.cancelTask(Driver.session, TransferTaskID(999))).rejection == .unknownTask)
        #expect(driver.feed(.setPriority(Driver.session, id, 2)).rejection == .invalidValue)
        #expect(driver.feed(.answerChallenge(Driver.session, id, .cancel)).rejection == .invalidState)
    }

    @Test("sessions and tasks per app are bounded")
    func limits() {
        var driver = Driver.withOpenSession {
            $0.maximumSessionsPerApp = 2
            $0.maximumTasksPerApp = 3
        }
        #expect(driver.feed(.openSession(TransferSessionID(app: Driver.app, identifier: "two"), nil)).reply == .done)
        #expect(driver.feed(.openSession(TransferSessionID(app: Driver.app, identifier: "three"), nil)).rejection == .tooManySessions)
        // Reopening one that exists is not a new session.
        #expect(driver.feed(.openSession(Driver.session, nil)).reply == .done)
        // Another app has its own count.
        #expect(driver.feed(.openSession(TransferSessionID(app: "other", identifier: "three"), nil)).reply == .done)
        for name in ["a", "b", "c"] { driver.download(name) }
        #expect(driver.feed(.createTask(Driver.session, .download("https://x/d", to: "/d"))).rejection == .tooManyTasks)
        #expect(driver.feed(.openSession(TransferSessionID(app: Driver.app, identifier: "bad\nname"), nil)).rejection == .invalidValue)
    }
}
