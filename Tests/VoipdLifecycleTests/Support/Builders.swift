import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Drivers brought to each phase through public inputs only, the way an app gets there.
extension Driver {
    /// An app in `phase`, with one VoIP socket held for it.
    ///
    /// - active: launched in the foreground (and connected, if it speaks the protocol).
    /// - inactive: active, then interrupted (willResignActive acknowledged).
    /// - background: a background task begun in the foreground keeps it running after
    ///   didEnterBackground (task id 1).
    /// - suspending: backgrounded with nothing to do; the stop is not confirmed yet.
    /// - suspended: the stop is confirmed.
    /// - terminated: suspended, then the process exited after a long run (no quick death).
    static func at(_ phase: LifecyclePhase, policy: AppPolicy = .voipApp, timings: LifecycleTimings = LifecycleTimings(),
                   keepAlive: Duration? = nil, sourceLocation: SourceLocation = #_sourceLocation) -> Driver {
        var driver = Driver(policy: policy, timings: timings)
        driver.feed(.heldSocketsChanged(1), sourceLocation: sourceLocation)
        if phase != .notRunning {
            driver.launchInForeground(sourceLocation: sourceLocation)
            if let keepAlive { driver.feed(.setKeepAlive(keepAlive), sourceLocation: sourceLocation) }
        }
        switch phase {
        case .notRunning, .active:
            break
        case .inactive:
            driver.feed(.interruptionBegan, sourceLocation: sourceLocation)
            driver.acknowledgeIfConnected(.willResignActive, sourceLocation: sourceLocation)
        case .background:
            driver.feed(.beginBackgroundTask(name: "upload"), sourceLocation: sourceLocation)
            driver.enterBackground(sourceLocation: sourceLocation)
        case .suspending:
            driver.enterBackground(sourceLocation: sourceLocation)
            if policy.suspendsWhenQuiet { driver.feed(.quietMeasured, sourceLocation: sourceLocation) }
        case .suspended:
            driver.suspend(sourceLocation: sourceLocation)
        case .terminated:
            driver.suspend(sourceLocation: sourceLocation)
            driver.feed(.processExited(.exited(code: 0)), after: .seconds(60), sourceLocation: sourceLocation)
        }
        #expect(driver.phase == phase, "could not reach \(phase)", sourceLocation: sourceLocation)
        #expect(driver.app.inFlight == nil, sourceLocation: sourceLocation)
        return driver
    }

    /// Launched in the foreground; connected if the app speaks the protocol.
    mutating func launchInForeground(sourceLocation: SourceLocation = #_sourceLocation) {
        feed(.launched(inBackground: false, reason: "test"), sourceLocation: sourceLocation)
        if app.policy.speaksProtocol { feed(.connected, sourceLocation: sourceLocation) }
    }

    /// Sent to the background with willResignActive acknowledged: didEnterBackground is in
    /// flight (for an app with a connection). Returns the actions that sent it.
    @discardableResult
    mutating func leaveForeground(sourceLocation: SourceLocation = #_sourceLocation) -> LifecycleOutcome {
        let resign = feed(.backgroundRequested, sourceLocation: sourceLocation)
        guard app.connection == .connected else { return resign }
        return acknowledge(.willResignActive, sourceLocation: sourceLocation)
    }

    /// Sent to the background, with willResignActive and didEnterBackground acknowledged.
    mutating func enterBackground(sourceLocation: SourceLocation = #_sourceLocation) {
        leaveForeground(sourceLocation: sourceLocation)
        acknowledgeIfConnected(.didEnterBackground, sourceLocation: sourceLocation)
    }

    /// Sent to the background and stopped, the stop confirmed.
    mutating func suspend(sourceLocation: SourceLocation = #_sourceLocation) {
        enterBackground(sourceLocation: sourceLocation)
        if app.policy.suspendsWhenQuiet { feed(.quietMeasured, sourceLocation: sourceLocation) }
        #expect(phase == .suspending, sourceLocation: sourceLocation)
        feed(.stopConfirmed, sourceLocation: sourceLocation)
    }
}

/// A readiness report for the socket named `sip`.
let sipData = SocketReadiness(name: "sip", bytesAvailable: 512, peerClosed: false)
