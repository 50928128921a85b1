import Foundation
import Testing
import VoipdTransfers

/// Discretionary tasks and the daily budget per network kind (the test configuration: 1000
/// bytes a day).
@Suite("Daily budget")
struct BudgetTests {
    private func discretionary(_ driver: inout Driver, _ name: String) -> TransferTaskID {
        driver.create(TransferTaskSpec(kind: .download(destination: "/d/\(name)"), request: TransferRequest(url: "https://x/\(name)"), discretionary: true)).id
    }

    @Test("every byte counts; once the budget is spent discretionary tasks wait for the next window, others go on")
    func spent() {
        var driver = Driver.withOpenSession()
        driver.feed(.network(NetworkStatus(kind: .wifi)))
        let ordinary = driver.download("big").id
        driver.complete(ordinary, bytes: 1200)
        #expect(driver.engine.state.budgets.used(.wifi, at: driver.now, length: 86400) == 1200)
        let waiting = discretionary(&driver, "later")
        guard case .budgetSpent(let until)? = driver.engine.waitReason(of: waiting, at: driver.now) else {
            Issue.record("not waiting for the budget")
            return
        }
        #expect(abs(until.timeIntervalSince(driver.now) - 86400) < 1)
        #expect(driver.download("urgent").step.started.count == 1, "a task that is not discretionary is not held back")
        #expect(driver.engine.nextDeadline == until)
        // "things pick up again roughly 24 hours later"
        #expect(driver.tickToDeadline().startedTasks == [waiting])
    }

    @Test("a running discretionary task pauses when the budget runs out mid-transfer")
    func pausesMidTransfer() {
        var driver = Driver.withOpenSession()
        driver.feed(.network(NetworkStatus(kind: .wifi)))
        let id = discretionary(&driver, "a")
        driver.report(id, .response(HTTPResponseHead(status: 200), resumedFrom: 0))
        #expect(driver.report(id, .progress(TransferProgress(bytesReceived: 999))).stops.isEmpty)
        let step = driver.report(id, .progress(TransferProgress(bytesReceived: 1001)))
        #expect(step.stops.map(\.task) == [id] && step.stops[0].keepPartial)
    }

    @Test("bytes kept from an earlier attempt are not counted again; sent bytes count")
    func resumedBytes() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.report(id, .response(HTTPResponseHead(status: 206), resumedFrom: 700))
        driver.report(id, .progress(TransferProgress(bytesReceived: 750)))
        driver.report(id, .progress(TransferProgress(bytesReceived: 800)))
        #expect(driver.engine.state.budgets.used(.other, at: driver.now, length: 86400) == 100)
        let up = driver.create(.upload("/d/u", to: "https://x/u")).id
        driver.report(up, .progress(TransferProgress(bytesSent: 50)))
        #expect(driver.engine.state.budgets.used(.other, at: driver.now, length: 86400) == 150)
    }

    @Test("bytes count on the network the attempt started on; each kind has its own budget")
    func perKind() {
        var driver = Driver.withOpenSession()
        driver.feed(.network(NetworkStatus(kind: .wifi)))
        driver.complete(driver.download("a").id, bytes: 2000)
        driver.feed(.network(NetworkStatus(kind: .ethernet)))
        let id = discretionary(&driver, "b")
        #expect(driver.task(id)?.runningAttempt != nil, "the ethernet budget is untouched")
        #expect(driver.engine.state.budgets.used(.ethernet, at: driver.now, length: 86400) == 0)
    }

    @Test("with no budget configured discretionary tasks are never held back by usage")
    func noBudget() {
        var driver = Driver.withOpenSession { $0.dailyBudget = nil }
        driver.complete(driver.download("a").id, bytes: 1_000_000)
        let id = discretionary(&driver, "b")
        #expect(driver.task(id)?.runningAttempt != nil)
    }
}
