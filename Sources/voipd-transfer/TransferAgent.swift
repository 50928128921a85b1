import Foundation
import FoundationNetworking
import Glibc
import VoipdSystem
import VoipdTransfers
import VoipdVocabulary

/// Performs voipd's attempts with URLSession. Every piece of state lives on one serial
/// queue, which is also URLSession's delegate queue: commands are dispatched onto it and
/// delegate calls arrive on it.
final class TransferAgent: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let queue: DispatchQueue
    private let channel: ParentChannel
    private var session: URLSession!
    private var attempts: [TransferTaskID: Attempt] = [:]
    private let delegateQueue: BoundedDelegateQueue
    private var byTask: [Int: TransferTaskID] = [:]

    init(channel: ParentChannel) {
        self.channel = channel
        queue = DispatchQueue(label: "voipd-transfer")
        // The delegate calls run on the agent's serial queue, so commands and delegate calls
        // take turns on it.
        delegateQueue = BoundedDelegateQueue(target: queue)
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.urlCredentialStorage = nil
        // voipd decides how many run and to which hosts.
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForResource = TransferOptions.sevenDays * 52
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: delegateQueue)
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
            previous.task?.cancel()
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
        let task: URLSessionTask
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
            task = delegateQueue.withLoopFree { session.dataTask(with: request) }
        case .upload(let source):
            let size: Int64
            do {
                size = try UploadSource.check(source)
            } catch {
                return end(order, .fileFailure(error.message), TransferProgress())
            }
            attempt = Attempt(order: order, files: nil, requestedOffset: 0)
            attempt.progress.bytesExpectedToSend = size
            task = delegateQueue.withLoopFree { session.uploadTask(with: request, fromFile: URL(fileURLWithPath: source)) }
        }
        attempts[order.task] = attempt
        run(task, for: attempt)
    }

    private func run(_ task: URLSessionTask, for attempt: Attempt) {
        attempt.task = task
        byTask[task.taskIdentifier] = attempt.order.task
        // resume() waits for URLSession's loop, which may be waiting for this queue.
        delegateQueue.withLoopFree { task.resume() }
    }

    private static func request(_ order: AttemptOrder) -> URLRequest? {
        guard let url = URL(string: order.request.url) else { return nil }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: order.timeoutIntervalForRequest)
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
        attempt.task?.cancel()
    }

    // MARK: - URLSession

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        completionHandler(.allow)
        guard let attempt = attempt(for: dataTask), attempt.cancellation == nil else { return }
        guard let http = response as? HTTPURLResponse else {
            attempt.cancellation = .file("the response is not HTTP")
            return dataTask.cancel()
        }
        let head = HTTPResponseHead(http)
        attempt.response = head
        guard head.isSuccess else {
            // FoundationNetworking ignores the disposition; cancelling is how the body of an
            // error (or a challenge) is left unread.
            attempt.cancellation = .unwantedStatus(head)
            return dataTask.cancel()
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
                return dataTask.cancel()
            }
            do throws(FileProblem) {
                guard let partial = attempt.partial.take() else { throw FileProblem(message: "\(files.partialPath) was closed") }
                if truncate { try DownloadFiles.empty(partial) }
                attempt.output = PartialFileWriter(file: partial, offset: attempt.resumedFrom)
            } catch {
                attempt.cancellation = .file(error.message)
                return dataTask.cancel()
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
                return fail(attempt, dataTask, writing: error)
            }
        }
        attempt.progress.bytesReceived += Int64(data.count)
        reportProgressIfDue(attempt)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        guard let attempt = attempt(for: task), attempt.cancellation == nil else { return }
        attempt.progress.bytesSent = totalBytesSent
        reportProgressIfDue(attempt)
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

    private func fail(_ attempt: Attempt, _ task: URLSessionTask, writing error: any Error) {
        attempt.cancellation = .file("cannot write \(attempt.files?.partialPath ?? ""): \(Self.describe(error))")
        task.cancel()
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

    private func reportProgressIfDue(_ attempt: Attempt) {
        let now = MonotonicInstant.now
        guard attempt.progressDue(now: now) else { return }
        attempt.lastProgressReport = now
        channel.send(.attempt(AttemptReport(task: attempt.order.task, attempt: attempt.order.attempt, event: .progress(attempt.progress))))
    }

    private func attempt(for task: URLSessionTask) -> Attempt? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let id = byTask[task.taskIdentifier], let attempt = attempts[id], attempt.task === task else { return nil }
        return attempt
    }

    private func forget(_ attempt: Attempt) {
        if let task = attempt.task { byTask[task.taskIdentifier] = nil }
        if attempts[attempt.order.task] === attempt { attempts[attempt.order.task] = nil }
    }
}
