import Foundation
import Testing
import VoipdTransfers

/// Network failures: retries with back-off until the resource timeout, downloads resuming
/// with a range when the server allows it.
@Suite("Retries and resumption")
struct RetryTests {
    private let resumable = HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "\"abc\"", "Content-Length": "1000"])
    private func lost(_ message: String = "connection lost") -> AttemptOutcome {
        .networkFailure(NetworkFailure(code: -1005, message: message, isTransient: true))
    }

    @Test("a transient failure is retried after 1, 2, 4, 8, 8 s; the retries resume from the validator")
    func backoff() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .response(resumable, resumedFrom: 0))
        var delays: [Double] = []
        for _ in 0..<5 {
            let failedAt = driver.now
            driver.report(id, .ended(lost(), TransferProgress(bytesReceived: 400)))
            #expect(driver.task(id)?.lastFailure == "connection lost")
            let retry = driver.tickToDeadline()
            delays.append(driver.now.timeIntervalSince(failedAt))
            #expect(retry.started.first?.resumeFrom == .entityTag("\"abc\""))
        }
        #expect(delays == [1, 2, 4, 8, 8])
        #expect(driver.task(id)?.failuresInARow == 5)
        // A response resets the count.
        driver.report(id, .response(HTTPResponseHead(status: 206, headers: ["Content-Range": "bytes 400-999/1000"]), resumedFrom: 400))
        #expect(driver.task(id)?.failuresInARow == 0)
    }

    @Test("a download whose server gave no validator restarts; so does every upload")
    func restarts() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .response(HTTPResponseHead(status: 200, headers: ["Content-Length": "1000"]), resumedFrom: 0))
        driver.report(id, .ended(lost(), TransferProgress(bytesReceived: 400)))
        #expect(driver.tickToDeadline().started.first?.resumeFrom == nil)
        let up = driver.create(.upload("/d/u", to: "https://x/u")).id
        driver.report(up, .response(resumable, resumedFrom: 0))
        driver.report(up, .ended(lost(), TransferProgress(bytesSent: 10)))
        let retry = driver.tickToDeadline()
        #expect(retry.started.first { $0.task == up }?.resumeFrom == nil)
    }

    @Test("the validator of the latest response counts: a changed resource resumes from its new tag")
    func newValidator() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .response(resumable, resumedFrom: 0))
        driver.report(id, .ended(lost(), TransferProgress(bytesReceived: 400)))
        driver.tickToDeadline()
        var changed = resumable
        changed.headers.set("ETag", "\"def\"")
        driver.report(id, .response(changed, resumedFrom: 0))
        driver.report(id, .ended(lost(), TransferProgress(bytesReceived: 100)))
        #expect(driver.tickToDeadline().started.first?.resumeFrom == .entityTag("\"def\""))
    }

    @Test("a new network retries at once")
    func networkChange() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        for _ in 0..<3 {
            driver.report(id, .ended(lost(), TransferProgress()))
            driver.tickToDeadline()
        }
        driver.report(id, .ended(lost(), TransferProgress()))
        #expect(driver.engine.waitReason(of: id, at: driver.now) == .notBefore(driver.now.addingTimeInterval(8)))
        #expect(driver.feed(.network(NetworkStatus(kind: .wifi))).startedTasks == [id])
    }

    @Test("a permanent failure ends the task with the network error")
    func permanent() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let failure = NetworkFailure(code: -1202, message: "certificate untrusted", isTransient: false)
        let step = driver.report(id, .ended(.networkFailure(failure), TransferProgress()))
        #expect(step.delivery?.events.first?.completion?.error == .network(failure))
        #expect(step.discarded.isEmpty, "the agent removed the partial file itself")
    }

    @Test("retries go on until the resource timeout, which ends the task as timed out")
    func retriesUntilTimeout() {
        var driver = Driver.withOpenSession(options: TransferOptions(timeoutIntervalForResource: 30))
        let id = driver.download("a").id
        var step = TransferStep(reply: nil, actions: [])
        while driver.task(id)?.isFinished == false {
            if driver.task(id)?.runningAttempt != nil { driver.report(id, .ended(lost(), TransferProgress(bytesReceived: 5))) }
            step = driver.tickToDeadline()
        }
        #expect(driver.now == driver.task(id)!.createdAt.addingTimeInterval(30))
        #expect(step.delivery?.events.first?.completion?.error == .timedOut)
    }

    @Test("reports of an attempt that is no longer current are ignored")
    func staleReports() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .ended(lost(), TransferProgress()))
        driver.tickToDeadline()
        #expect(driver.attempt(of: id) == 2)
        let stale = driver.feed(.attempt(AttemptReport(task: id, attempt: 1, event: .ended(.completed(HTTPResponseHead(status: 200)), TransferProgress()))))
        #expect(stale.actions.isEmpty)
        #expect(driver.task(id)?.runningAttempt?.number == 2)
        #expect(driver.feed(.attempt(AttemptReport(task: TransferTaskID(77), attempt: 1, event: .progress(TransferProgress())))).actions.isEmpty)
    }
}
