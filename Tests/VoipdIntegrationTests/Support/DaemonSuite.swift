/// A suite whose every test has a voipd of its own. Swift Testing makes a new instance of the
/// suite for each test, so ``harness`` is started before the test and stopped once it ends,
/// however it ends. A test here uses it rather than starting another.
class DaemonSuite {
    let harness: DaemonHarness

    init() throws { harness = try DaemonHarness() }

    deinit { harness.stop() }
}
