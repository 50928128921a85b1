import VoipdProtocol
import VoipdTransfers

/// What a background session tells its delegate, under URLSession's names. Every method has
/// a default; the events come from ``VoIPApplication/processEvents(timeoutMilliseconds:)``
/// (or ``VoIPApplication/dispatch(_:)``), and the delivery that carried them is acknowledged
/// once they have all been handled, which tells voipd they need not be delivered again.
public protocol BackgroundSessionDelegate: AnyObject {
    /// A task ended (`urlSession(_:task:didCompleteWithError:)`): `completion.error` is nil
    /// when it succeeded; a download's file is at its destination by then.
    func backgroundSession(_ session: BackgroundSession, task: UInt64, didCompleteWith completion: TransferCompletion)
    /// A 401 asks for credentials (`urlSession(_:task:didReceive:completionHandler:)`). The
    /// default takes the 401 as the answer.
    func backgroundSession(_ session: BackgroundSession, task: UInt64, didReceive challenge: AuthenticationChallenge) -> ChallengeAnswer
    /// Bytes moved, only while the app runs (`didWriteData`, `didSendBodyData`).
    func backgroundSession(_ session: BackgroundSession, task: UInt64, didUpdate progress: TransferProgress)
    /// Every event of a delivery has been handed over
    /// (`urlSessionDidFinishEvents(forBackgroundURLSession:)`).
    func backgroundSessionDidFinishEvents(_ session: BackgroundSession)
}

extension BackgroundSessionDelegate {
    public func backgroundSession(_ session: BackgroundSession, task: UInt64, didCompleteWith completion: TransferCompletion) {}
    public func backgroundSession(_ session: BackgroundSession, task: UInt64, didReceive challenge: AuthenticationChallenge) -> ChallengeAnswer {
        .performDefaultHandling
    }
    public func backgroundSession(_ session: BackgroundSession, task: UInt64, didUpdate progress: TransferProgress) {}
    public func backgroundSessionDidFinishEvents(_ session: BackgroundSession) {}
}

/// A background session (`URLSessionConfiguration.background(withIdentifier:)`): voipd
/// performs its tasks while the app is suspended or not running, then resumes or relaunches
/// the app to hand over the results. Tasks outlive the process: an app relaunched for its
/// events opens the session again under the same identifier (in
/// ``VoIPApplicationDelegate/application(_:handleEventsForBackgroundSession:)``) and finds
/// them with ``getAllTasks()``. docs/TRANSFERS.md.
public final class BackgroundSession {
    public let identifier: String
    public let options: TransferOptions?
    public weak var delegate: BackgroundSessionDelegate?
    unowned let application: VoIPApplication

    init(identifier: String, options: TransferOptions?, delegate: BackgroundSessionDelegate?, application: VoIPApplication) {
        self.identifier = identifier
        self.options = options
        self.delegate = delegate
        self.application = application
    }

    /// Downloads `url` into the file `destination` (an absolute path in a directory of the
    /// app's user); the file appears whole, or not at all. Returns the task's number.
    @discardableResult
    public func downloadTask(with url: String, to destination: String, headers: HTTPHeaders = HTTPHeaders(),
                             priority: Double? = nil, discretionary: Bool? = nil) throws -> UInt64 {
        try create(TransferCreateRequest(id: 0, session: identifier, kind: .download, url: url, headers: headers, path: destination,
                                         priority: priority, discretionary: discretionary))
    }

    /// Uploads the file `source` to `url` (PUT unless `method` says otherwise). Uploads are
    /// from a file only, as in iOS.
    @discardableResult
    public func uploadTask(with url: String, fromFile source: String, method: String = "PUT", headers: HTTPHeaders = HTTPHeaders(),
                           priority: Double? = nil, discretionary: Bool? = nil) throws -> UInt64 {
        try create(TransferCreateRequest(id: 0, session: identifier, kind: .upload, url: url, method: method, headers: headers,
                                         path: source, priority: priority, discretionary: discretionary))
    }

    /// A task with every option (`allowsExpensiveNetworkAccess`, the timeouts) spelled out.
    @discardableResult
    public func create(_ request: TransferCreateRequest) throws -> UInt64 {
        var request = request
        request.session = identifier
        let (result, _) = try application.request(.transferCreate, { id in
            var body = request
            body.id = id
            return body
        }, expecting: TransferCreateResult.self)
        return result.task
    }

    /// The session's tasks not yet handed over (`getAllTasks`).
    public func getAllTasks() throws -> [TransferTaskStatus] {
        try application.openSession(identifier, options: options)
    }

    public func cancel(task: UInt64) throws {
        try taskRequest(task, .cancel)
    }

    public func setPriority(_ priority: Double, of task: UInt64) throws {
        try taskRequest(task, .setPriority, priority: priority)
    }

    /// Answers a challenge later than from the delegate call.
    public func answerChallenge(of task: UInt64, with answer: ChallengeAnswer) throws {
        try taskRequest(task, .answerChallenge, answer: ChallengeAnswerMessage(answer))
    }

    /// `finishTasksAndInvalidate`: no new tasks; the session goes once its tasks have ended.
    public func finishTasksAndInvalidate() throws {
        try invalidate(.finishAndInvalidate)
    }

    /// `invalidateAndCancel`: its tasks are cancelled.
    public func invalidateAndCancel() throws {
        try invalidate(.invalidateAndCancel)
    }

    private func invalidate(_ verb: TransferSessionVerb) throws {
        _ = try application.request(.transferSession, { TransferSessionRequest(id: $0, verb: verb, session: identifier) },
                                    expecting: TransferTasksResult.self)
        application.sessions[identifier] = nil
    }

    private func taskRequest(_ task: UInt64, _ verb: TransferTaskVerb, priority: Double? = nil, answer: ChallengeAnswerMessage? = nil) throws {
        _ = try application.request(.transferTask, {
            TransferTaskRequest(id: $0, session: identifier, task: task, verb: verb, priority: priority, answer: answer)
        }, expecting: EmptyResult.self)
    }
}

extension VoIPApplication {
    /// Opens (or opens again, after a relaunch) the background session `identifier`, whose
    /// events go to `delegate`. `options` is its configuration (nil: voipd's defaults).
    public func backgroundSession(identifier: String, options: TransferOptions? = nil,
                                  delegate: BackgroundSessionDelegate?) throws -> BackgroundSession {
        _ = try openSession(identifier, options: options)
        let session = BackgroundSession(identifier: identifier, options: options, delegate: delegate, application: self)
        sessions[identifier] = session
        return session
    }

    /// The background session opened under `identifier` in this process, if any.
    public func openedBackgroundSession(_ identifier: String) -> BackgroundSession? { sessions[identifier] }

    func openSession(_ identifier: String, options: TransferOptions?) throws -> [TransferTaskStatus] {
        let (result, _) = try request(.transferSession, { TransferSessionRequest(id: $0, verb: .open, session: identifier, options: options) },
                                      expecting: TransferTasksResult.self)
        return result.tasks
    }

    /// Hands a delivery's events to the sessions' delegates; a session not open in this
    /// process is first asked for (``VoIPApplicationDelegate/application(_:handleEventsForBackgroundSession:)``).
    func dispatchTransferEvents(_ payload: TransferEventsPayload) {
        var touched: [String] = []
        for event in payload.events {
            if sessions[event.session] == nil { delegate?.application(self, handleEventsForBackgroundSession: event.session) }
            guard let session = sessions[event.session] else { continue }
            if !touched.contains(event.session) { touched.append(event.session) }
            if let completion = event.completion {
                session.delegate?.backgroundSession(session, task: event.task, didCompleteWith: completion)
            }
            if let challenge = event.challenge {
                let answer = session.delegate?.backgroundSession(session, task: event.task, didReceive: challenge) ?? .performDefaultHandling
                do {
                    try session.answerChallenge(of: event.task, with: answer)
                } catch {
                    // The task ended meanwhile (cancelled, timed out): its completion follows.
                }
            }
        }
        for identifier in touched {
            if let session = sessions[identifier] { session.delegate?.backgroundSessionDidFinishEvents(session) }
        }
    }

    func dispatchTransferProgress(_ event: TransferEventMessage) {
        guard let session = sessions[event.session], let progress = event.progress else { return }
        session.delegate?.backgroundSession(session, task: event.task, didUpdate: progress)
    }
}
