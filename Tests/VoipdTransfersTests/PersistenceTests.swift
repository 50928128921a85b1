import Foundation
import Testing
import VoipdTransfers

/// The records the store keeps, and an engine carrying on from them.
@Suite("Records and restoring")
struct PersistenceTests {
    @Test("creating, starting, completing and handing over write and then forget the task's record")
    func recordLifecycle() {
        var driver = Driver.withOpenSession()
        let (id, created) = driver.download("a")
        #expect(created.savedTasks == [id])
        #expect(created.savedState, "the next task number is kept")
        let head = HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "\"1\""])
        #expect(driver.report(id, .response(head, resumedFrom: 0)).savedTasks == [id], "the validator is kept for a resumption")
        let done = driver.report(id, .ended(.completed(head), TransferProgress(bytesReceived: 5)))
        #expect(done.savedTasks == [id])
        #expect(driver.feed(.eventsHandled(app: Driver.app, done.delivery!.id)).forgotten == [id])
    }

    @Test("the app's presence alone writes no record (it is fed on the wake path); a change of its limiter does")
    func presenceIsNotWritten() {
        var driver = Driver.withOpenSession(.background)
        #expect(!driver.appBecomes(.suspended).savedState)
        #expect(!driver.appBecomes(.background).savedState)
        #expect(!driver.appBecomes(.suspended).savedState)
        // A completion resumes it: the limiter counts, and that is written.
        let id = driver.download("a").id
        driver.complete(id)
        let delivered = driver.tickToDeadline()
        #expect(delivered.delivery?.wake == .resume && delivered.savedState)
        #expect(!driver.appBecomes(.background).savedState)
        // The front resets the limiter.
        #expect(driver.appBecomes(.foreground).savedState)
        #expect(!driver.appBecomes(.background).savedState)
    }

    @Test("records round-trip through JSON; a challenge's credential is never written")
    func codable() throws {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .ended(.challenged(HTTPResponseHead(status: 401, headers: ["WWW-Authenticate": "Basic"])), TransferProgress()))
        driver.feed(.answerChallenge(Driver.session, id, .useCredential(user: "alice", password: "s3cret")))
        let task = try #require(driver.task(id))
        #expect(task.credential != nil)
        let json = try JSONEncoder().encode(task)
        #expect(!String(decoding: json, as: UTF8.self).contains("s3cret"))
        var decoded = try JSONDecoder().decode(TransferTask.self, from: json)
        #expect(decoded.credential == nil)
        decoded.credential = task.credential
        #expect(decoded == task)
        let state = try JSONDecoder().decode(TransferEngine.DurableState.self, from: JSONEncoder().encode(driver.engine.durableState))
        #expect(state == driver.engine.durableState)
    }

    @Test("restored, a running download waits again and resumes from its validator; numbering carries on")
    func restoreRunning() throws {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .response(HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "\"v\""]), resumedFrom: 0))
        let records = try roundTrip(driver.engine)
        var restored = Driver(restoring: TransferEngine(configuration: .testing, restoring: records.state, tasks: records.tasks))
        #expect(restored.engine.app(Driver.app).presence == .notRunning)
        let step = restored.feed(.tick)
        #expect(step.started.first?.task == id)
        #expect(step.started.first?.attempt == 2)
        #expect(step.started.first?.resumeFrom == .entityTag("\"v\""))
        let next = restored.download("b").id
        #expect(next.rawValue == id.rawValue + 1)
    }

    @Test("restored, completions the app had not handled are delivered again, relaunching it")
    func restoreUndelivered() throws {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let sent = driver.complete(id).delivery!
        let records = try roundTrip(driver.engine)
        var restored = Driver(restoring: TransferEngine(configuration: .testing, restoring: records.state, tasks: records.tasks))
        let step = restored.feed(.tick)
        #expect(step.delivery?.events.map(\.task) == [id])
        #expect(step.delivery?.wake == .relaunch)
        #expect(step.delivery?.id != sent.id, "delivery numbers carry on")
    }

    @Test("restored, the limiter and the budgets are as they were")
    func restoreLimiter() throws {
        var driver = Driver.withOpenSession()
        let a = driver.download("a").id
        driver.appBecomes(.suspended)
        driver.complete(a, bytes: 700)
        driver.tickToDeadline()
        let records = try roundTrip(driver.engine)
        let restored = TransferEngine(configuration: .testing, restoring: records.state, tasks: records.tasks)
        #expect(restored.app(Driver.app).limiter == driver.engine.app(Driver.app).limiter)
        #expect(restored.state.budgets == driver.engine.state.budgets)
    }

    private func roundTrip(_ engine: TransferEngine) throws -> (state: TransferEngine.DurableState, tasks: [TransferTask]) {
        let state = try JSONDecoder().decode(TransferEngine.DurableState.self, from: JSONEncoder().encode(engine.durableState))
        let tasks = try engine.tasks.values.map { try JSONDecoder().decode(TransferTask.self, from: JSONEncoder().encode($0)) }
        return (state, tasks)
    }
}

/// The framing of the agent's messages.
@Suite("Agent frames")
struct AgentFrameTests {
    let encoder = JSONEncoder()
    let decoder = JSONDecoder()

    @Test("a command and a report round-trip")
    func roundTrip() throws {
        let order = AttemptOrder(task: TransferTaskID(3), attempt: 2, kind: .download(destination: "/d/a"), partialPath: "/d/.a.3.voipd-partial",
                                 request: TransferRequest(url: "http://127.0.0.1/a"), resumeFrom: .entityTag("\"e\""),
                                 timeoutIntervalForRequest: 60, progressInterval: 0.5)
        let packet = try AgentFrame.encode(AgentCommand.start(order), type: AgentFrame.commandType, encoder: encoder)
        #expect(packet[4] == 1 && packet[6] == 0 && packet[7] == 1)
        #expect(try AgentFrame.decode(AgentCommand.self, type: AgentFrame.commandType, packet: packet, length: packet.count, decoder: decoder) == .start(order))
        let report = AgentReport.attempt(AttemptReport(task: TransferTaskID(3), attempt: 2, event: .ended(.stopped, TransferProgress(bytesReceived: 9))))
        let reportPacket = try AgentFrame.encode(report, type: AgentFrame.reportType, encoder: encoder)
        #expect(try AgentFrame.decode(AgentReport.self, type: AgentFrame.reportType, packet: reportPacket, length: reportPacket.count, decoder: decoder) == report)
    }

    @Test("wrong type, version, length, descriptors or body are refused")
    func refused() throws {
        let good = try AgentFrame.encode(AgentCommand.discardPartial(task: TransferTaskID(1), path: "/p"), type: AgentFrame.commandType, encoder: encoder)
        func fails(_ packet: [UInt8], length: Int? = nil, type: UInt16 = AgentFrame.commandType) -> Bool {
            (try? AgentFrame.decode(AgentCommand.self, type: type, packet: packet, length: length ?? packet.count, decoder: decoder)) == nil
        }
        #expect(!fails(good))
        #expect(fails(good, type: AgentFrame.reportType))
        var badVersion = good; badVersion[7] = 2
        #expect(fails(badVersion))
        var badLength = good; badLength[0] &+= 1
        #expect(fails(badLength))
        var descriptors = good; descriptors[6] = 1
        #expect(fails(descriptors))
        #expect(fails(Array(good.prefix(5))))
        #expect(fails(good, length: 70000))
        var garbage = good
        garbage[8] = UInt8(ascii: "x")
        #expect(fails(garbage))
        #expect(throws: AgentFrame.Error.self) {
            try AgentFrame.encode(AgentCommand.discardPartial(task: TransferTaskID(1), path: String(repeating: "p", count: 70000)),
                                  type: AgentFrame.commandType, encoder: encoder)
        }
    }
}
