import Foundation
import FoundationNetworking
import Glibc
import VoipdSystem
import VoipdTransfers
import VoipdVocabulary

/// Performs voipd's attempts with URLSession. Every piece of state lives on one serial
/// queue, which is also URLSession's delegate queue: commands are dispatched onto it and
/// delegate calls arrive on it.
///
/// Each attempt has a URLSession of its own. URLSession's calls that wait for its loop
/// (making a task, `resume()`, `cancel()`: `workQueue.sync` in swift-corelibs-foundation
/// 6.3) get their turn only when the loop lets go, and a loop held at the delegate queue's
/// bound by a download that comes faster than it is written does not: libcurl goes on with
/// that transfer as long as its socket has data. Nor do separate sessions make separate
/// loops: every session's queues target one serial queue (`URLSession.sharedQueue`). The
/// delegate queue makes the loop let go of it every so often (``BoundedDelegateQueue``'s
/// `yieldLoop()`); the old way out, letting the loop past the bound while the agent waited,
/// let the delegate queue grow by hundreds of MiB (`AgentCommandTests.startBesideFastDownload`).
final class TransferAgent: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let queue: DispatchQueue
    private let channel: ParentChannel
    private let sessionConfiguration: URLSessionConfiguration
    private var attempts: [TransferTaskID: Attempt] = [:]
    private let delegateQueue: BoundedDelegateQueue
    /// The attempt of each task, by the task object: each session numbers its tasks from 1,
    /// so `taskIdentifier` names a task only within its session.
    private var byTask: [ObjectIdentifier: TransferTaskID] = [:]

    init(channel: ParentChannel) {
        self.channel = channel
        queue = DispatchQueue(label: "voipd-transfer")
        // The delegate calls run on the agent's serial queue, so commands and delegate calls
        // take turns on it.
        delegateQueue = BoundedDelegateQueue(target: queue)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        // voipd decides how many run and to which hosts.
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForResource = TransferOptions.sevenDays * 52
        configuration.timeoutIntervalForRequest = Self.urlSessionRequestTimeout
        sessionConfiguration = configuration
        super.init()
    }

    // MARK: - Commands

    func handle(_ command: AgentCommand) {
        dispatchPrecondition(condition: .onQueue(queue))
        switch command {
        case .start(let order): start(order)
        case .stop(let task, let attempt, let keepPartial): stop(task, attempt, keepPartial: keepPartial)
        case .discardPartial(_, let path): discardPartialFile(path)
        }
    }

    private func start(_ order: AttemptOrder) {
        if let previous = attempts[order.task] {
            // voipd moved on without waiting for the last one to end: it is no longer wanted.
            previous.cancellation = .stopped(keepPartial: true)
            cancel(previous)
            // What it wrote stays; its lock goes with its descriptor, for the new attempt.
            try? previous.output?.flush()
            previous.output = nil
            previous.partial = nil
            forget(previous)
        }
        do {
            try TransferValidation.validate(order.request)
        } catch {
            return end(order, .fileFailure(error.message), TransferProgress())
        }
        guard var request = Self.request(order) else { return end(order, .fileFailure("unusable URL"), TransferProgress()) }

        let attempt: Attempt
        let makeTask: @Sendable (URLSession) -> URLSessionTask
        switch order.kind {
        case .download(let destination):
            let files: DownloadFiles
            do {
                files = try DownloadFiles(destination: destination, partialPath: order.partialPath ?? "", task: order.task)
            } catch {
                return end(order, .fileFailure(error.message), TransferProgress())
            }
            let partial: FileDescriptor
            do {
                partial = try files.openPartial()
            } catch where error.inUse {
                return end(order, .networkFailure(NetworkFailure(code: 0, message: error.message, isTransient: true)), TransferProgress())
            } catch {
                return end(order, .fileFailure(error.message), TransferProgress())
            }
            let offset: Int64
            do {
                offset = order.resumeFrom == nil ? 0 : try DownloadFiles.size(of: partial)
            } catch {
                return end(order, .fileFailure(error.message), TransferProgress())
            }
            if offset > 0, let validator = order.resumeFrom { Self.askForRange(from: offset, validator: validator, in: &request) }
            attempt = Attempt(order: order, files: files, requestedOffset: offset)
            attempt.partial = consume partial
            let request = request
            makeTask = { session in session.dataTask(with: request) }
        case .upload(let source):
            let size: Int64
            do {
                size = try UploadSource.check(source)
            } catch {
                return end(order, .fileFailure(error.message), TransferProgress())
            }
            attempt = Attempt(order: order, files: nil, requestedOffset: 0)
            attempt.progress.bytesExpectedToSend = size
            let request = request
            makeTask = { session in session.uploadTask(with: request, fromFile: URL(fileURLWithPath: source)) }
        }
        attempts[order.task] = attempt
        run(attempt, makingTaskWith: makeTask)
    }

    /// Gives the attempt a session of its own, then makes its task and resumes it on the
    /// attempt's queue of URLSession calls (``Attempt/calls``), where a cancel of it goes
    /// too, after them. Not on this queue: the session's loop may come to wait for this queue
    /// (the delegate queue's bound) while a call waits for the loop. The task joins its
    /// attempt here before it runs, and the request timeout counts from then; an attempt
    /// stopped or replaced before its task existed never runs it.
    private func run(_ attempt: Attempt, makingTaskWith makeTask: @escaping @Sendable (URLSession) -> URLSessionTask) {
        let session = URLSession(configuration: sessionConfiguration, delegate: self, delegateQueue: delegateQueue)
        delegateQueue.register(session)
        attempt.session = session
        let (id, calls) = (attempt.order.task, attempt.calls)
        calls.async { [self] in
            let task = makeTask(session)
            queue.async { [self] in
                // Its session, held here, names it (a forgotten attempt has none).
                guard let attempt = attempts[id], attempt.session === session else {
                    // Replaced: it was forgotten, its session invalidated.
                    return calls.async { task.cancel() }
                }
                guard attempt.cancellation == nil else {
                    // Stopped before its task existed: it ends now.
                    calls.async { task.cancel() }
                    return finish(attempt, error: nil)
                }
                attempt.task = task
                byTask[ObjectIdentifier(task)] = id
                watchIdleness(of: attempt)
                calls.async { task.resume() }
            }
        }
    }

    /// Cancels the attempt's task, on its queue of URLSession calls rather than this queue.
    /// URLSession's `cancel()` waits for its loop (`workQueue.sync` in swift-corelibs-foundation
    /// 6.3), and the loop may be
    /// waiting for this queue to take the delegate calls it queued: called here, a stop in
    /// the middle of a fast download, or a write failing there, deadlocked the agent with
    /// every attempt of its user; with the loop let go meanwhile (past the delegate queue's
    /// bound), that queue grew by hundreds of MiB before the cancel had its turn. From
    /// elsewhere, this queue goes on taking the calls (those of the cancelled attempt are
    /// dropped), the loop stays within its bound, and the cancel runs in its turn.
    private func cancel(_ attempt: Attempt) {
        guard let task = attempt.task else { return }
        attempt.calls.async { task.cancel() }
    }

    /// What URLSession is given as its request timeout: so far away that the timer it makes
    /// is never armed. FoundationNetworking re-creates that timer (a dispatch source, armed
    /// and cancelled through libdispatch's manager thread) for every 16 KiB libcurl hands
    /// over, a fifth of the agent's CPU on a fast download (docs/BENCHMARKS.md); a deadline
    /// past `DispatchTime`'s range (here about 10¹⁵ ms) becomes `DISPATCH_TIME_FOREVER`, and
    /// libdispatch leaves such a timer out of its heap. Nor did that timer ever end an
    /// attempt here: a server gone silent held it with a timeout of 0.5 s or 2 s as long as
    /// the test waited (`DownloadTests.requestTimeout`). The agent keeps the request timeout
    /// itself (``watchIdleness(of:)``).
    static let urlSessionRequestTimeout: TimeInterval = 1e12

    private static func request(_ order: AttemptOrder) -> URLRequest? {
        guard let url = URL(string: order.request.url) else { return nil }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: urlSessionRequestTimeout)
        request.httpMethod = order.request.method
        for header in order.request.headers { request.addValue(header.value, forHTTPHeaderField: header.name) }
        return request
    }

    private static func askForRange(from offset: Int64, validator: ResumeValidator, in request: inout URLRequest) {
        for header in RangeResumption.requestHeaders(offset: offset, validator: validator) {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
    }

    private func stop(_ id: TransferTaskID, _ number: Int, keepPartial: Bool) {
        guard let attempt = attempts[id], attempt.order.attempt == number else {
            // It has ended already; a download's partial file may still be there.
            return
        }
        attempt.cancellation = .stopped(keepPartial: keepPartial)
        cancel(attempt)
    }

    // MARK: - The request timeout

    /// `timeoutIntervalForRequest` as URLSession means it: the attempt fails when nothing
    /// has come or gone for that long, from its start (connecting, waiting for the response)
    /// to its end. One timer per attempt, armed for the time left since the last activity
    /// and re-armed only when it fires, instead of one per chunk.
    private func watchIdleness(of attempt: Attempt) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        attempt.idleTimer = timer
        attempt.lastActivity = .now
        timer.setEventHandler { [weak self, weak attempt] in
            guard let self, let attempt else { return }
            self.idleTimerFired(attempt)
        }
        timer.schedule(deadline: .now() + attempt.order.timeoutIntervalForRequest)
        timer.resume()
    }

    private func idleTimerFired(_ attempt: Attempt) {
        guard attempts[attempt.order.task] === attempt, attempt.cancellation == nil, attempt.task != nil else { return }
        let limit = attempt.order.timeoutIntervalForRequest
        let idle = (MonotonicInstant.now - attempt.lastActivity).seconds
        guard idle >= limit else {
            attempt.idleTimer?.schedule(deadline: .now() + (limit - idle))
            return
        }
        attempt.cancellation = .idle
        cancel(attempt)
    }

    // MARK: - URLSession

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        completionHandler(.allow)
        guard let attempt = attempt(for: dataTask), attempt.cancellation == nil else { return }
        attempt.lastActivity = .now
        guard let http = response as? HTTPURLResponse else {
            attempt.cancellation = .file("the response is not HTTP")
            return cancel(attempt)
        }
        let head = HTTPResponseHead(http)
        attempt.response = head
        guard head.isSuccess else {
            // FoundationNetworking ignores the disposition; cancelling is how the body of an
            // error (or a challenge) is left unread.
            attempt.cancellation = .unwantedStatus(head)
            return cancel(attempt)
        }
        if let files = attempt.files {
            let decision = RangeResumption.decide(head, requestedOffset: attempt.requestedOffset)
            let truncate: Bool
            switch decision {
            case .append(let total):
                truncate = false
                attempt.resumedFrom = attempt.requestedOffset
                attempt.progress.bytesExpectedToReceive = total
            case .restart(let total):
                truncate = true
                attempt.progress.bytesExpectedToReceive = total ?? (http.expectedContentLength >= 0 ? http.expectedContentLength : nil)
            case .mismatch:
                attempt.cancellation = .rangeMismatch
                return cancel(attempt)
            }
            do throws(FileProblem) {
                guard let partial = attempt.partial.take() else { throw FileProblem(message: "\(files.partialPath) was closed") }
                if truncate { try DownloadFiles.empty(partial) }
                attempt.output = PartialFileWriter(file: partial, offset: attempt.resumedFrom)
            } catch {
                attempt.cancellation = .file(error.message)
                return cancel(attempt)
            }
            attempt.progress.bytesReceived = attempt.resumedFrom
        } else {
            attempt.progress.bytesExpectedToReceive = http.expectedContentLength >= 0 ? http.expectedContentLength : nil
        }
        channel.send(.attempt(AttemptReport(task: attempt.order.task, attempt: attempt.order.attempt,
                                            event: .response(head, resumedFrom: attempt.resumedFrom))))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let attempt = attempt(for: dataTask), attempt.cancellation == nil else { return }
        if let output = attempt.output {
            do {
                try output.append(data)
            } catch {
                return fail(attempt, writing: error)
            }
        }
        attempt.progress.bytesReceived += Int64(data.count)
        let now = MonotonicInstant.now
        attempt.lastActivity = now
        reportProgressIfDue(attempt, now: now)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        guard let attempt = attempt(for: task), attempt.cancellation == nil else { return }
        attempt.progress.bytesSent = totalBytesSent
        let now = MonotonicInstant.now
        attempt.lastActivity = now
        reportProgressIfDue(attempt, now: now)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let attempt = attempt(for: task) else { return }
        finish(attempt, error: error)
    }

    private func finish(_ attempt: Attempt, error: (any Error)?) {
        forget(attempt)
        var outcome = self.outcome(of: attempt, error: error)
        do {
            if case .completed = outcome, let files = attempt.files {
                // The bytes reach the disk before the name does.
                try attempt.output?.synchronize()
                try files.commit()
            } else {
                // What arrived is kept for a resumption.
                try attempt.output?.flush()
            }
        } catch let problem as FileProblem {
            outcome = .fileFailure(problem.message)
        } catch {
            outcome = .fileFailure("cannot write \(attempt.files?.partialPath ?? ""): \(Self.describe(error))")
        }
        attempt.output = nil
        attempt.partial = nil
        // The partial file stays only while the task may resume from it.
        switch outcome {
        case .httpError, .fileFailure, .stopped(keepPartial: false):
            attempt.files?.discard()
        case .networkFailure(let failure) where !failure.isTransient:
            attempt.files?.discard()
        default:
            break
        }
        end(attempt.order, outcome.reported, attempt.progress)
    }

    private func fail(_ attempt: Attempt, writing error: any Error) {
        attempt.cancellation = .file("cannot write \(attempt.files?.partialPath ?? ""): \(Self.describe(error))")
        cancel(attempt)
    }

    private static func describe(_ error: any Error) -> String {
        if let errno = error as? Errno { return DownloadFiles.reason(errno) }
        return "\(error)"
    }

    // MARK: - Outcomes

    /// The outcome, with the stop's disposition still attached.
    private enum Outcome {
        case completed(HTTPResponseHead)
        case httpError(HTTPResponseHead)
        case challenged(HTTPResponseHead)
        case networkFailure(NetworkFailure)
        case fileFailure(String)
        case stopped(keepPartial: Bool)

        var reported: AttemptOutcome {
            switch self {
            case .completed(let head): return .completed(head)
            case .httpError(let head): return .httpError(head)
            case .challenged(let head): return .challenged(head)
            case .networkFailure(let failure): return .networkFailure(failure)
            case .fileFailure(let message): return .fileFailure(message)
            case .stopped: return .stopped
            }
        }
    }

    private func outcome(of attempt: Attempt, error: (any Error)?) -> Outcome {
        switch attempt.cancellation {
        case .stopped(let keepPartial): return .stopped(keepPartial: keepPartial)
        case .unwantedStatus(let head): return head.isChallenge ? .challenged(head) : .httpError(head)
        case .file(let message): return .fileFailure(message)
        case .rangeMismatch:
            attempt.files?.discard()
            return .networkFailure(NetworkFailure(code: 0, message: "the server's partial response does not continue the file; starting again", isTransient: true))
        case .idle:
            return .networkFailure(NetworkFailure(code: URLError.timedOut.rawValue,
                                                  message: "nothing came for \(attempt.order.timeoutIntervalForRequest) s (timeoutIntervalForRequest)", isTransient: true))
        case nil: break
        }
        if let error { return .networkFailure(NetworkErrors.failure(error)) }
        guard let head = attempt.response else {
            return .networkFailure(NetworkFailure(code: URLError.badServerResponse.rawValue, message: "no response", isTransient: true))
        }
        if attempt.files != nil, let expected = attempt.progress.bytesExpectedToReceive, attempt.progress.bytesReceived != expected {
            return .networkFailure(NetworkFailure(code: URLError.networkConnectionLost.rawValue,
                                                  message: "the body ended after \(attempt.progress.bytesReceived) of \(expected) bytes", isTransient: true))
        }
        return .completed(head)
    }

    private func end(_ order: AttemptOrder, _ outcome: AttemptOutcome, _ progress: TransferProgress) {
        channel.send(.attempt(AttemptReport(task: order.task, attempt: order.attempt, event: .ended(outcome, progress))))
    }

    private func reportProgressIfDue(_ attempt: Attempt, now: MonotonicInstant) {
        guard attempt.progressDue(now: now) else { return }
        attempt.lastProgressReport = now
        channel.send(.attempt(AttemptReport(task: attempt.order.task, attempt: attempt.order.attempt, event: .progress(attempt.progress))))
    }

    private func attempt(for task: URLSessionTask) -> Attempt? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let id = byTask[ObjectIdentifier(task)], let attempt = attempts[id], attempt.task === task else { return nil }
        return attempt
    }

    private func forget(_ attempt: Attempt) {
        attempt.idleTimer?.cancel()
        attempt.idleTimer = nil
        if let task = attempt.task { byTask[ObjectIdentifier(task)] = nil }
        if attempts[attempt.order.task] === attempt { attempts[attempt.order.task] = nil }
        // A session holds its delegate, the agent, until it is invalidated; its task has
        // ended, or is cancelled with it.
        if let session = attempt.session {
            attempt.session = nil
            attempt.calls.async { session.invalidateAndCancel() }
        }
    }
}
