import Foundation
import Testing
import VoipdTransfers

/// Which waiting tasks start: priority, the limits, and the conditions discretionary tasks
/// wait for.
@Suite("Scheduling")
struct SchedulingTests {
    @Test("a task starts at once, as a download with identity encoding and no range")
    func startsAtOnce() {
        var driver = Driver.withOpenSession()
        let (id, step) = driver.download("a.bin")
        #expect(step.started.count == 1)
        let order = step.started[0]
        #expect(order.task == id && order.attempt == 1)
        #expect(order.kind == .download(destination: "/home/phone/a.bin"))
        #expect(order.partialPath == "/home/phone/.a.bin.\(id).voipd-partial")
        #expect(order.request.headers["Accept-Encoding"] == "identity")
        #expect(order.resumeFrom == nil)
        #expect(order.timeoutIntervalForRequest == 60)
        #expect(order.progressInterval == 0.5)
        #expect(step.savedTasks == [id])
    }

    @Test("uploads keep the app's method and headers and get no Accept-Encoding")
    func upload() {
        var driver = Driver.withOpenSession()
        let (_, step) = driver.create(.upload("/home/phone/p.jpg", to: "https://example.org/up", method: "POST", headers: ["X-ID": "7"]))
        #expect(step.started.first?.request.method == "POST")
        #expect(step.started.first?.request.headers["X-ID"] == "7")
        #expect(step.started.first?.request.headers["Accept-Encoding"] == nil)
        #expect(step.started.first?.partialPath == nil)
    }

    @Test("higher priority first, then the older; a slot freed goes to the next in that order")
    func priorityOrder() {
        var driver = Driver.withOpenSession { $0.maximumConcurrentTransfers = 1 }
        let (first, _) = driver.download("first", priority: 0.1)
        let (low, _) = driver.download("low", priority: 0.2)
        driver.advance(by: 1)
        let (highOld, _) = driver.download("high-old", priority: 0.9)
        driver.advance(by: 1)
        let (highNew, _) = driver.download("high-new", priority: 0.9)
        let (middle, _) = driver.download("middle", priority: 0.5)
        #expect(driver.engine.waitReason(of: low, at: driver.now) == .queued)
        var order: [TransferTaskID] = [first]
        for _ in 0..<4 {
            let running = driver.engine.tasks.values.first { $0.runningAttempt != nil }!.id
            order += driver.complete(running).startedTasks
        }
        #expect(order == [first, highOld, highNew, middle, low])
    }

    @Test("nothing running is stopped for a task of higher priority")
    func noPreemption() {
        var driver = Driver.withOpenSession { $0.maximumConcurrentTransfers = 1 }
        driver.download("low", priority: 0)
        let (_, step) = driver.download("urgent", priority: 1)
        #expect(step.stops.isEmpty && step.started.isEmpty)
    }

    @Test("the per-host limit holds back one host's tasks while other hosts' go")
    func perHost() {
        var driver = Driver.withOpenSession {
            $0.maximumConcurrentTransfersPerHost = 2
            $0.maximumConcurrentTransfers = 3
        }
        let a1 = driver.download("1", host: "a.example", priority: 1).id
        driver.download("2", host: "a.example", priority: 1)
        let a3 = driver.download("3", host: "A.EXAMPLE:8443", priority: 1).id
        let b1 = driver.download("4", host: "b.example", priority: 0).id
        let c1 = driver.download("5", host: "c.example", priority: 0).id
        #expect(driver.task(a3)?.runningAttempt == nil, "a third to the same host (the port is not part of it) waits")
        #expect(driver.task(b1)?.runningAttempt != nil, "another host's lower-priority task goes")
        #expect(driver.task(c1)?.runningAttempt == nil, "the overall limit is reached")
        #expect(driver.complete(a1).startedTasks == [a3])
    }

    @Test("a discretionary task waits on battery and goes on external power")
    func battery() {
        var driver = Driver.withOpenSession(options: TransferOptions(discretionary: true))
        driver.feed(.power(.battery))
        let (id, step) = driver.download("a")
        #expect(step.started.isEmpty)
        #expect(driver.engine.waitReason(of: id, at: driver.now) == .onBattery)
        #expect(driver.feed(.power(.externalPower)).startedTasks == [id])
    }

    @Test("a discretionary task waits on an expensive network; so does one not allowed on it")
    func expensive() {
        var driver = Driver.withOpenSession()
        driver.feed(.network(NetworkStatus(kind: .cellular, isExpensive: true)))
        let discretionary = driver.create(TransferTaskSpec(kind: .download(destination: "/d/1"), request: TransferRequest(url: "https://x/1"), discretionary: true)).id
        let forbidden = driver.create(TransferTaskSpec(kind: .download(destination: "/d/2"), request: TransferRequest(url: "https://x/2"), allowsExpensiveNetworkAccess: false)).id
        let ordinary = driver.create(.download("https://x/3", to: "/d/3")).id
        #expect(driver.engine.waitReason(of: discretionary, at: driver.now) == .expensiveNetwork)
        #expect(driver.engine.waitReason(of: forbidden, at: driver.now) == .expensiveNetwork)
        #expect(driver.task(ordinary)?.runningAttempt != nil)
        #expect(Set(driver.feed(.network(NetworkStatus(kind: .wifi))).startedTasks) == [discretionary, forbidden])
    }

    @Test("nothing starts without a network")
    func noNetwork() {
        var driver = Driver.withOpenSession()
        driver.feed(.network(NetworkStatus(isAvailable: false)))
        let (id, step) = driver.download("a")
        #expect(step.started.isEmpty)
        #expect(driver.engine.waitReason(of: id, at: driver.now) == .noNetwork)
        #expect(driver.feed(.network(NetworkStatus())).startedTasks == [id])
    }

    @Test("a running discretionary task is paused when on battery; its partial file is kept and it resumes with a range")
    func pausedAndResumed() {
        var driver = Driver.withOpenSession(options: TransferOptions(discretionary: true))
        let (id, _) = driver.download("a")
        let head = HTTPResponseHead(status: 200, headers: ["Accept-Ranges": "bytes", "ETag": "\"v1\"", "Content-Length": "900"])
        driver.report(id, .response(head, resumedFrom: 0))
        driver.report(id, .progress(TransferProgress(bytesReceived: 300, bytesExpectedToReceive: 900)))
        let pause = driver.feed(.power(.battery))
        #expect(pause.stops.map(\.task) == [id] && pause.stops[0].keepPartial)
        // Stopping, it keeps its slot until the agent says it has stopped.
        #expect(driver.task(id)?.runningAttempt?.pausing == true)
        driver.report(id, .ended(.stopped, TransferProgress(bytesReceived: 310)))
        #expect(driver.engine.waitReason(of: id, at: driver.now) == .onBattery)
        #expect(driver.task(id)?.failuresInARow == 0)
        let resume = driver.feed(.power(.externalPower))
        #expect(resume.started.first?.attempt == 2)
        #expect(resume.started.first?.resumeFrom == .entityTag("\"v1\""))
    }

    @Test("iOS 8: a task created in the background is discretionary until the app comes to the foreground")
    func inferredDiscretionary() {
        var driver = Driver.withOpenSession(.background)
        driver.feed(.power(.battery))
        let (inBackground, step) = driver.download("bg")
        #expect(step.started.isEmpty)
        #expect(driver.task(inBackground)?.discretionaryInferred == true)
        #expect(driver.task(inBackground)?.options.discretionary == false)
        #expect(driver.engine.waitReason(of: inBackground, at: driver.now) == .onBattery)
        // The inference is dropped when the app moves to the front: it starts, on battery.
        let front = driver.appBecomes(.foreground)
        #expect(front.startedTasks == [inBackground])
        #expect(front.savedTasks.contains(inBackground))
        #expect(driver.task(inBackground)?.isDiscretionary == false)
        // Created in the foreground: not discretionary.
        let (inFront, step2) = driver.download("fg")
        #expect(step2.startedTasks == [inFront])
        // Going back to the background does not make it discretionary again.
        driver.appBecomes(.background)
        #expect(driver.task(inFront)?.isDiscretionary == false)
    }

    @Test("a task asked to be discretionary stays so in the foreground")
    func explicitDiscretionary() {
        var driver = Driver.withOpenSession(options: TransferOptions(discretionary: true))
        driver.feed(.power(.battery))
        let (id, _) = driver.download("a")
        driver.appBecomes(.foreground)
        #expect(driver.engine.waitReason(of: id, at: driver.now) == .onBattery)
    }

    @Test("a task's own options override its session's")
    func overrides() {
        var driver = Driver.withOpenSession(options: TransferOptions(discretionary: true, timeoutIntervalForResource: 100))
        let (id, _) = driver.create(TransferTaskSpec(kind: .download(destination: "/d/x"), request: TransferRequest(url: "https://x/x"),
                                                     discretionary: false, timeoutIntervalForRequest: 5))
        #expect(driver.task(id)?.options == TransferOptions(discretionary: false, timeoutIntervalForResource: 100, timeoutIntervalForRequest: 5))
    }

    @Test("a priority can be changed while waiting")
    func changePriority() {
        var driver = Driver.withOpenSession { $0.maximumConcurrentTransfers = 1 }
        let first = driver.download("first").id
        let a = driver.download("a", priority: 0.5).id
        let b = driver.download("b", priority: 0.5).id
        #expect(driver.feed(.setPriority(Driver.session, b, 0.8)).savedTasks == [b])
        #expect(driver.complete(first).startedTasks == [b])
        #expect(driver.complete(b).startedTasks == [a])
    }
}
