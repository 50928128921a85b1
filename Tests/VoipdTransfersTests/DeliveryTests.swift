import Foundation
import Testing
import VoipdTransfers

/// Handing events to apps: coalescing, resumes and relaunches, and the resume rate limiter
/// (the test curve: 10 s doubling up to 160 s, events coalesced over 2 s).
@Suite("Delivery and the resume rate limiter")
struct DeliveryTests {
    @Test("five downloads queued at once complete while the app is suspended: one resume with all five (seed 003)")
    func batch() {
        var driver = Driver.withOpenSession()
        let ids = (1...5).map { driver.download("f\($0)").id }
        driver.appBecomes(.background)
        driver.appBecomes(.suspended)
        // "request1 completes … request 3 … request 2 … request 4 … request 5"
        var deliveries: [TransferDelivery] = []
        for (index, id) in [ids[0], ids[2], ids[1], ids[3], ids[4]].enumerated() {
            deliveries += driver.complete(id, after: index == 0 ? 0 : 0.4).deliveries
        }
        #expect(deliveries.isEmpty, "nothing is delivered within the coalescing window")
        let step = driver.tickToDeadline()
        #expect(step.deliveries.count == 1)
        #expect(step.delivery?.wake == .resume)
        #expect(step.delivery?.events.map(\.task) == [ids[0], ids[2], ids[1], ids[3], ids[4]])
        #expect(driver.engine.app(Driver.app).limiter.level == 1)
    }

    /// The seed's chain: start one, suspend, it completes, resume to handle it and start the
    /// next, suspend… Each transfer takes 1 s. Returns the delays between a completion on
    /// the wire and the resume that hands it over, and between a task's creation and its start.
    private func chain(_ placement: ResumeLimiterPlacement, length: Int) -> (resumeDelays: [Double], startDelays: [Double]) {
        var driver = Driver.withOpenSession {
            $0.resumeLimiter.placement = placement
            // Tasks created in the background are discretionary: no budget to hold them back here.
            $0.dailyBudget = nil
        }
        var id = driver.download("chain-0").id
        driver.appBecomes(.background)
        driver.appBecomes(.suspended)
        var resumeDelays: [Double] = []
        var startDelays: [Double] = []
        for round in 1...length {
            let completedAt = driver.now.addingTimeInterval(1)
            driver.complete(id, after: 1)
            let resume = driver.tickToDeadline()
            guard let delivery = resume.delivery else {
                Issue.record("no delivery in round \(round)")
                break
            }
            #expect(delivery.wake == .resume)
            resumeDelays.append(driver.now.timeIntervalSince(completedAt))
            driver.appBecomes(.background)
            let created = driver.now
            let step = driver.create(.download("https://example.org/\(round)", to: "/home/phone/chain-\(round)"))
            id = step.id
            driver.feed(.eventsHandled(app: Driver.app, delivery.id))
            driver.appBecomes(.suspended)
            if step.step.started.isEmpty {
                let start = driver.tickToDeadline()
                #expect(start.startedTasks == [id])
            }
            startDelays.append(driver.now.timeIntervalSince(created))
        }
        return (resumeDelays, startDelays)
    }

    @Test("iOS 7 placement (the default): resumes for a chain of tasks come later and later")
    func chainDelaysResumes() {
        let (resumeDelays, startDelays) = chain(.delayResumes, length: 7)
        // Resume n waits the work period since resume n−1: 10, 20, 40, 80, 160 (the cap)
        // from the previous resume; the transfer took 1 s of it.
        #expect(resumeDelays == [2, 9, 19, 39, 79, 159, 159])
        #expect(startDelays == [0, 0, 0, 0, 0, 0, 0])
    }

    @Test("iOS 8 placement: resumes come after coalescing only; a task created while resumed waits the work period")
    func chainDelaysNewTasks() {
        let (resumeDelays, startDelays) = chain(.delayNewTasks, length: 7)
        #expect(resumeDelays == [2, 2, 2, 2, 2, 2, 2])
        #expect(startDelays == [10, 20, 40, 80, 160, 160, 160])
    }

    @Test("a task created while the app runs on its own in the background is not delayed (iOS 8 placement)")
    func notWokenNotDelayed() {
        var driver = Driver.withOpenSession(.background) { $0.resumeLimiter.placement = .delayNewTasks }
        #expect(driver.download("a").step.started.count == 1)
    }

    @Test("iOS 8 placement: a challenge resumes the app at once and counts; the stalled task is not delayed when answered")
    func challengeImmediate() {
        var driver = Driver.withOpenSession { $0.resumeLimiter.placement = .delayNewTasks }
        let id = driver.download("a").id
        let earlier = [driver.download("x").id, driver.download("y").id]
        driver.appBecomes(.suspended)
        // Two earlier wakes raise the level to 2.
        for other in earlier {
            driver.completeWhileSuspended(other)
        }
        #expect(driver.engine.app(Driver.app).limiter.level == 2)
        let challenged = driver.challenge(id)
        #expect(challenged.delivery?.wake == .resume, "at once, with no coalescing")
        #expect(driver.engine.app(Driver.app).limiter.level == 3)
        driver.appBecomes(.background)
        let answered = driver.feed(.answerChallenge(Driver.session, id, .useCredential(user: "u", password: "p")))
        #expect(answered.startedTasks == [id], "not delayed by the 40 s work period")
    }

    /// Two downloads; the app suspended; the first completes and a resume hands it over, which
    /// puts the limiter at level 1. The driver (its clock at that resume), the second download,
    /// and the delivery.
    private func resumedOnceWithADownloadLeft(sourceLocation: SourceLocation = #_sourceLocation)
        -> (driver: Driver, left: TransferTaskID, delivery: DeliveryID?) {
        var driver = Driver.withOpenSession()
        let first = driver.download("a").id
        let second = driver.download("b").id
        driver.appBecomes(.suspended)
        driver.complete(first)
        let resume = driver.tickToDeadline()
        #expect(resume.delivery?.wake == .resume, sourceLocation: sourceLocation)
        #expect(driver.engine.app(Driver.app).limiter.level == 1, sourceLocation: sourceLocation)
        return (driver, second, resume.delivery?.id)
    }

    @Test("iOS 7 placement: a challenge waits for the work period like any event, and counts")
    func challengeDelayed() {
        var (driver, second, _) = resumedOnceWithADownloadLeft()
        let resumedAt = driver.now
        driver.appBecomes(.background)
        driver.appBecomes(.suspended)
        let step = driver.challenge(second)
        #expect(step.deliveries.isEmpty)
        let delivered = driver.tickToDeadline()
        #expect(delivered.delivery?.events.first?.challenge != nil)
        #expect(driver.now == resumedAt.addingTimeInterval(10))
        #expect(driver.engine.app(Driver.app).limiter.level == 2)
    }

    @Test("the work period counts from the resume itself, which voipd performs once the delivery's records are written, not from the decision")
    func periodFromTheResume() throws {
        var (driver, left, delivery) = resumedOnceWithADownloadLeft()
        // Its records took 0.3 s to write (a busy disk): voipd resumed it then.
        driver.advance(by: 0.3)
        let resumedAt = driver.now
        #expect(!driver.appBecomes(.background).savedState, "nothing is written on the wake path")
        driver.feed(.eventsHandled(app: Driver.app, try #require(delivery)))
        driver.appBecomes(.suspended)
        driver.complete(left)
        #expect(driver.tickToDeadline().delivery?.wake == .resume)
        #expect(driver.now == resumedAt.addingTimeInterval(10), "one work period after the resume, not 9.7 s")
    }

    @Test("a wake that failed is not the resume the work period counts from")
    func failedWakeIsNotTheResume() throws {
        var (driver, _, delivery) = resumedOnceWithADownloadLeft()
        let decidedAt = driver.now
        driver.feed(.deliveryFailed(app: Driver.app, try #require(delivery)))
        // Resumed later for something else: it takes its events then, with no wake of its own.
        driver.advance(by: 5)
        #expect(driver.appBecomes(.background).deliveries.map(\.wake) == [TransferWake.none])
        #expect(driver.engine.app(Driver.app).limiter.lastResume == decidedAt)
    }

    @Test("the limiter decays when the app is left alone")
    func decay() {
        var driver = Driver.withOpenSession()
        let ids = (0..<4).map { driver.download("f\($0)").id }
        driver.appBecomes(.suspended)
        // Three resumes in a row: level 3 (40 s).
        for id in ids.prefix(3) {
            driver.completeWhileSuspended(id)
        }
        #expect(driver.engine.app(Driver.app).limiter.level == 3)
        // Left alone 80 s (2 × 40 s) and 40 s more: level 1, so the next resume waits 10 s.
        let last = driver.engine.app(Driver.app).limiter.lastResume!
        driver.advance(to: last.addingTimeInterval(120))
        driver.complete(ids[3])
        driver.tickToDeadline()
        #expect(driver.now == last.addingTimeInterval(122), "only the coalescing window: the work period (10 s at level 1) has passed")
        #expect(driver.engine.app(Driver.app).limiter.level == 2)
    }

    @Test("coming to the foreground resets the limiter and delivers at once")
    func foregroundResets() {
        var (driver, left, _) = resumedOnceWithADownloadLeft()
        driver.appBecomes(.foreground)
        #expect(driver.engine.app(Driver.app).limiter.level == 0)
        let step = driver.complete(left)
        #expect(step.delivery?.wake == TransferWake.none)
        #expect(driver.engine.app(Driver.app).limiter.level == 0, "a delivery to a running app is no resume")
    }

    @Test("events for a running background app go at once and do not count")
    func backgroundRunning() {
        var driver = Driver.withOpenSession(.background)
        let id = driver.download("a").id
        let step = driver.complete(id)
        #expect(step.delivery?.wake == TransferWake.none)
        #expect(driver.engine.app(Driver.app).limiter.level == 0)
    }

    @Test("an app that is not running is relaunched; a failed relaunch waits until the app runs")
    func relaunch() {
        var driver = Driver.withOpenSession()
        let a = driver.download("a").id
        driver.appBecomes(.notRunning)
        driver.complete(a)
        let step = driver.tickToDeadline()
        #expect(step.delivery?.wake == .relaunch)
        let failed = driver.feed(.deliveryFailed(app: Driver.app, step.delivery!.id))
        #expect(failed.deliveries.isEmpty)
        #expect(driver.engine.nextDeadline == nil || driver.engine.nextDeadline! > driver.now.addingTimeInterval(3600))
        // Launched by the user: the events go at once.
        let launched = driver.appBecomes(.foreground)
        #expect(launched.delivery?.events.map(\.task) == [a])
        #expect(launched.delivery?.wake == TransferWake.none)
    }

    @Test("an app that ends before handling a delivery gets its events again")
    func redelivery() {
        var driver = Driver.withOpenSession()
        let a = driver.download("a").id
        let first = driver.complete(a).delivery!
        // Suspended before saying it handled them: still theirs.
        driver.appBecomes(.suspended)
        #expect(driver.engine.nextDeadline == nil)
        // It ends instead: relaunched with them.
        driver.appBecomes(.notRunning)
        let again = driver.tickToDeadline()
        #expect(again.delivery?.wake == .relaunch)
        #expect(again.delivery?.events.map(\.task) == [a])
        #expect(again.delivery?.id != first.id)
        // The old delivery's acknowledgement is no longer good for anything.
        #expect(driver.feed(.eventsHandled(app: Driver.app, first.id)).forgotten.isEmpty)
        #expect(driver.feed(.eventsHandled(app: Driver.app, again.delivery!.id)).forgotten == [a])
    }

    @Test("one delivery carries the events of every session of the app")
    func sessions() {
        var driver = Driver.withOpenSession()
        let other = TransferSessionID(app: Driver.app, identifier: "photos")
        driver.feed(.openSession(other, nil))
        let a = driver.download("a").id
        let b = driver.create(.download("https://x/b", to: "/d/b"), in: other).id
        driver.appBecomes(.suspended)
        driver.complete(a)
        driver.complete(b)
        let step = driver.tickToDeadline()
        #expect(step.delivery?.events.map(\.session) == ["bg", "photos"])
    }

    @Test("progress goes only to a running app")
    func progress() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let progress = TransferProgress(bytesReceived: 10, bytesExpectedToReceive: 100)
        #expect(driver.report(id, .progress(progress)).progressEvents == [TransferEvent(task: id, session: "bg", kind: .progress(progress))])
        driver.appBecomes(.suspended)
        let step = driver.report(id, .progress(progress))
        #expect(step.progressEvents.isEmpty)
        #expect(step.actions.isEmpty, "progress alone is neither a wake nor a record to write")
    }

    @Test("apps are woken independently, each with its own limiter")
    func twoApps() {
        var driver = Driver.withOpenSession()
        let other = TransferSessionID(app: "mail", identifier: "bg")
        driver.appBecomes(.foreground, app: "mail")
        driver.feed(.openSession(other, nil))
        let a = driver.download("a").id
        let b = driver.create(.download("https://x/b", to: "/d/b"), in: other).id
        driver.appBecomes(.suspended)
        driver.appBecomes(.suspended, app: "mail")
        driver.complete(a)
        driver.complete(b)
        let step = driver.tickToDeadline()
        #expect(step.deliveries.map(\.app) == ["mail", Driver.app])
        #expect(driver.engine.app("mail").limiter.level == 1 && driver.engine.app(Driver.app).limiter.level == 1)
    }
}
