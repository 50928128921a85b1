import Foundation
import Testing
import VoipdTransfers

/// How tasks end: success, HTTP errors, file errors, cancellation, the resource timeout.
@Suite("Completion")
struct CompletionTests {
    @Test("success: the completion carries the response and the bytes; handling it removes the task")
    func success() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let step = driver.complete(id, bytes: 1234)
        let event = step.delivery?.events.first
        #expect(step.delivery?.wake == TransferWake.none)
        #expect(event?.task == id && event?.session == "bg")
        #expect(event?.completion?.response?.status == 200)
        #expect(event?.completion?.error == nil)
        #expect(event?.completion?.progress.bytesReceived == 1234)
        let handled = driver.feed(.eventsHandled(app: Driver.app, step.delivery!.id))
        #expect(handled.forgotten == [id])
        #expect(driver.task(id) == nil)
    }

    @Test("a status that is not 2xx ends the task with an HTTP error and the response")
    func httpError() {
        var driver = Driver.withOpenSession()
        let id = driver.download("missing").id
        let completion = driver.complete(id, status: 404).delivery?.events.first?.completion
        #expect(completion?.error == .http(status: 404))
        #expect(completion?.response?.status == 404)
    }

    @Test("a file the agent cannot read or write ends the task with a file error")
    func fileError() {
        var driver = Driver.withOpenSession()
        let id = driver.create(.upload("/home/phone/secret", to: "https://x/u")).id
        let step = driver.report(id, .ended(.fileFailure("cannot open /home/phone/secret: Permission denied"), TransferProgress()))
        #expect(step.delivery?.events.first?.completion?.error == .file("cannot open /home/phone/secret: Permission denied"))
    }

    @Test("cancelling a running download stops it and drops its partial file; the app gets a cancelled completion")
    func cancelRunning() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let step = driver.feed(.cancelTask(Driver.session, id))
        #expect(step.reply == .done)
        #expect(step.stops.map(\.task) == [id] && step.stops[0].keepPartial == false)
        // Also removed by name: the attempt may have ended meanwhile, keeping it.
        #expect(step.discarded == [driver.task(id)!.partialPath!])
        #expect(step.actions.firstIndex { if case .stop = $0 { true } else { false } }!
                < step.actions.firstIndex { if case .discardPartial = $0 { true } else { false } }!, "stopped, then removed")
        #expect(step.delivery?.events.first?.completion?.error == .cancelled)
        // Cancelling again does nothing.
        #expect(driver.feed(.cancelTask(Driver.session, id)).actions.isEmpty)
        // The agent's late report of the stopped attempt is ignored.
        #expect(driver.report(id, .ended(.stopped, TransferProgress())).actions.isEmpty)
    }

    @Test("cancelling a waiting download that had started removes the partial file its attempts left")
    func cancelWaiting() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .ended(.networkFailure(NetworkFailure(code: -1005, message: "lost", isTransient: true)), TransferProgress()))
        let step = driver.feed(.cancelTask(Driver.session, id))
        #expect(step.discarded == [driver.task(id)!.partialPath!])
        #expect(step.stops.isEmpty)
    }

    @Test("the resource timeout ends a running task as timed out and stops its attempt")
    func timeoutRunning() {
        var driver = Driver.withOpenSession(options: TransferOptions(timeoutIntervalForResource: 100))
        let id = driver.download("a").id
        #expect(driver.engine.nextDeadline == driver.now.addingTimeInterval(100))
        driver.report(id, .progress(TransferProgress(bytesReceived: 10)), after: 50)
        let step = driver.tickToDeadline()
        #expect(step.stops.map(\.task) == [id])
        #expect(step.delivery?.events.first?.completion?.error == .timedOut)
        #expect(step.delivery?.events.first?.completion?.progress.bytesReceived == 10)
    }

    @Test("the resource timeout counts from creation, whatever the task waited for")
    func timeoutWaiting() {
        var driver = Driver.withOpenSession(options: TransferOptions(discretionary: true, timeoutIntervalForResource: 3600))
        driver.feed(.power(.battery))
        let id = driver.download("a").id
        let step = driver.tickToDeadline()
        #expect(driver.now == driver.task(id)!.createdAt.addingTimeInterval(3600))
        #expect(step.delivery?.events.first?.completion?.error == .timedOut)
        #expect(step.discarded.isEmpty, "it never started: no partial file")
        #expect(step.started.isEmpty)
    }

    @Test("invalidateAndCancel cancels every task of the session; the session goes once they are handed over")
    func invalidateAndCancel() {
        var driver = Driver.withOpenSession()
        let a = driver.download("a").id
        let b = driver.download("b").id
        let step = driver.feed(.invalidateSession(Driver.session, cancelTasks: true))
        #expect(Set(step.stops.map(\.task)) == [a, b])
        #expect(step.delivery?.events.count == 2)
        #expect(driver.feed(.createTask(Driver.session, .download("https://x/c", to: "/d/c"))).rejection == .unknownSession)
        #expect(driver.engine.state.sessions[Driver.session] != nil)
        driver.feed(.eventsHandled(app: Driver.app, step.delivery!.id))
        #expect(driver.engine.state.sessions[Driver.session] == nil)
    }

    @Test("finishTasksAndInvalidate lets the tasks finish")
    func finishAndInvalidate() {
        var driver = Driver.withOpenSession()
        let a = driver.download("a").id
        #expect(driver.feed(.invalidateSession(Driver.session, cancelTasks: false)).stops.isEmpty)
        let done = driver.complete(a)
        #expect(done.delivery?.events.first?.completion?.error == nil)
        driver.feed(.eventsHandled(app: Driver.app, done.delivery!.id))
        #expect(driver.engine.state.sessions.isEmpty)
        // Opening it again makes a new session.
        #expect(driver.feed(.openSession(Driver.session, nil)).reply == .done)
    }
}
