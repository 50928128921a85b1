import VoipdLifecycle
import VoipdVocabulary

/// The whole matrix: every ``LifecycleInput`` (every ``LifecycleTimer`` for `timerFired`,
/// and payloads that change the outcome) in every ``LifecyclePhase``.
///
/// The phases are those ``Driver/at(_:policy:timings:keepAlive:sourceLocation:)`` builds,
/// with a 600 s keep-alive set while the app runs; `inactive` is an interrupted app and
/// `background` one kept running by background task 1. A cell's expectation holds for an
/// app with a control connection and, unless it says `.unconnected(…)`, for one without.
/// Steps leave out timer cancellations (see ``Step``).
enum LifecycleMatrix {
    static let keepAlive: Duration = .seconds(600)

    static let rows: [MatrixRow] = processRows + requestRows + appRows + timerRows + systemRows

    // MARK: The process: started, connected, ended

    /// A fresh process in `phase`; an app that speaks the protocol gets time to connect.
    static func launched(from state: AppState, to phase: LifecyclePhase) -> Cell {
        Cell.to(phase, Steps.launch(from: state, to: phase, connects: true))
            .unconnected(.to(phase, Steps.launch(from: state, to: phase, connects: false)))
    }

    static let processRows: [MatrixRow] = [
        row(.launched(inBackground: false, reason: "launch"),
            notRunning: launched(from: .notRunning, to: .active),
            active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, suspended: .rejected,
            terminated: launched(from: .terminated, to: .active)),
        // A relaunch in the background is a wake: the resumed budgets, and the wake budget.
        row(.launched(inBackground: true, reason: "relaunch"),
            notRunning: launched(from: .notRunning, to: .background),
            active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, suspended: .rejected,
            terminated: launched(from: .terminated, to: .background)),
        // A process an earlier voipd left frozen, supervised again as it is: suspended, its
        // sockets armed, no launch counted.
        row(.takenBackSuspended(reason: "found frozen", keepAlive: nil),
            notRunning: .to(.suspended, [.transition(.notRunning, .suspended), .arm, .start(.hibernate)]),
            active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, suspended: .rejected,
            terminated: .to(.suspended, [.transition(.terminated, .suspended), .arm, .start(.hibernate)])),
        // With the keep-alive the dead voipd recorded for it: its timer runs again.
        row(.takenBackSuspended(reason: "found frozen", keepAlive: RecordedKeepAlive(interval: .seconds(600), due: nil)),
            notRunning: .to(.suspended, [.transition(.notRunning, .suspended), .arm, .start(.hibernate), .start(.keepAlive)]),
            active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, suspended: .rejected,
            terminated: .to(.suspended, [.transition(.terminated, .suspended), .arm, .start(.hibernate), .start(.keepAlive)])),
        // A process that is running was not the one that failed to start.
        row(.launchFailed("no such file"),
            notRunning: Cell.to(.terminated, [.transition(.notRunning, .terminated)]).recording(.launchFailed),
            active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, suspended: .rejected,
            terminated: Cell.stay([]).recording(.launchFailed)),
        row(.connected,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        row(.disconnected,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        row(.stopConfirmed,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .to(.suspended, [.arm, .transition(.background, .suspended), .start(.hibernate)]),
            suspended: .nothing, terminated: .nothing),
        // A stop that failed (or a suspended app found running could not be stopped again): the
        // app runs on and cannot be suspended; it is continued, its sockets its own again, and
        // ended as an app that exits on suspend is.
        row(.stopFailed("kill(-42, SIGSTOP): Operation not permitted"),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: Cell.to(.background, [.resume, .disarm, .start(.exitGrace), .deliver(.willTerminate), .start(.acknowledgement)])
                .unconnected(.to(.background, [.resume, .disarm, .requestExit, .start(.exitGrace)])),
            suspended: Cell.to(.background, [.resume, .disarm, .transition(.suspended, .background), .start(.exitGrace),
                                             .deliver(.willTerminate), .start(.acknowledgement)])
                .unconnected(.to(.background, [.resume, .disarm, .transition(.suspended, .background), .requestExit, .start(.exitGrace)])),
            terminated: .nothing),
        // A resume that failed leaves the process stopped, whatever its record says: it is
        // killed, not by choice (data relaunches it).
        row(.resumeFailed("kill(-42, SIGCONT): Operation not permitted"),
            notRunning: .nothing,
            active: killed(.suspendFailed), inactive: killed(.suspendFailed), background: killed(.suspendFailed),
            suspending: killed(.suspendFailed), suspended: killed(.suspendFailed),
            terminated: .nothing),
    ] + [
        (ProcessEnd.exited(code: 0), TerminationReason.Code.exited),
        (.signaled(signal: 11, name: "SIGSEGV"), .crashed),
        (.unknown, .exited),
    ].map { end, code in
        // Held sockets outlive the process: they are watched so that data relaunches it.
        // (The terminated app keeps the reason of its earlier exit.)
        row(.processExited(end),
            notRunning: .nothing,
            active: ended(from: .active, code), inactive: ended(from: .inactive, code),
            background: ended(from: .background, code), suspending: ended(from: .background, code),
            suspended: ended(from: .suspended, code),
            terminated: Cell.stay([]).recording(.exited))
    }

    /// The process ended with `code` recorded.
    static func ended(from state: AppState, _ code: TerminationReason.Code) -> Cell {
        Cell.to(.terminated, [.transition(state, .terminated), .arm]).recording(code)
    }

    // MARK: Requests: voipctl and the system

    /// A SIGKILL with the reason recorded; nothing else.
    static func killed(_ code: TerminationReason.Code) -> Cell { .stay([.kill(code)]) }

    /// A running app hears willTerminate, under the overall deadline; one without a
    /// connection gets SIGTERM and the grace.
    static let toldToTerminate = Cell.stay([.start(.exitGrace), .deliver(.willTerminate), .start(.acknowledgement)])
        .unconnected(.stay([.requestExit, .start(.exitGrace)]))

    static let requestRows: [MatrixRow] = [
        row(.foregroundRequested,
            notRunning: .stay([.launch(inBackground: false)]),
            active: .nothing,
            inactive: .nothing, // interrupted: it stays inactive until the interruption ends
            background: Cell.to(.inactive, Steps.enterForeground(from: .background, stopped: false, connected: true))
                .unconnected(.to(.active, Steps.enterForeground(from: .background, stopped: false, connected: false))),
            suspending: Cell.to(.inactive, Steps.enterForeground(from: .background, stopped: true, connected: true))
                .unconnected(.to(.active, Steps.enterForeground(from: .background, stopped: true, connected: false))),
            suspended: Cell.to(.inactive, Steps.enterForeground(from: .suspended, stopped: true, connected: true))
                .unconnected(.to(.active, Steps.enterForeground(from: .suspended, stopped: true, connected: false))),
            terminated: .stay([.launch(inBackground: false)])),
        row(.backgroundRequested,
            notRunning: .rejected,
            active: Cell.to(.inactive, Steps.announce(.willResignActive, .active, .inactive))
                .unconnected(.to(.suspending, [.transition(.active, .inactive), .transition(.inactive, .background)]
                    + Steps.taskBudget + Steps.suspend)),
            inactive: Cell.to(.background, Steps.announce(.didEnterBackground, .inactive, .background) + Steps.taskBudget)
                .unconnected(.to(.suspending, [.transition(.inactive, .background)] + Steps.taskBudget + Steps.suspend)),
            background: .nothing, suspending: .nothing, suspended: .nothing,
            terminated: .rejected),
        row(.interruptionBegan,
            notRunning: .rejected,
            active: Cell.to(.inactive, Steps.announce(.willResignActive, .active, .inactive))
                .unconnected(.to(.inactive, [.transition(.active, .inactive)])),
            inactive: .rejected, // already interrupted
            background: .rejected, suspending: .rejected, suspended: .rejected, terminated: .rejected),
        row(.interruptionEnded,
            notRunning: .rejected, active: .rejected,
            inactive: Cell.to(.active, Steps.announce(.didBecomeActive, .inactive, .active))
                .unconnected(.to(.active, [.transition(.inactive, .active)])),
            background: .rejected, suspending: .rejected, suspended: .rejected, terminated: .rejected),
        // A running app hears willTerminate; a stopped one is simply ended (seed 002).
        row(.terminateRequested,
            notRunning: .rejected,
            active: toldToTerminate, inactive: toldToTerminate, background: toldToTerminate,
            suspending: killed(.terminated), suspended: killed(.terminated),
            terminated: .rejected),
        row(.killRequested,
            notRunning: .rejected,
            active: killed(.forceQuit), inactive: killed(.forceQuit), background: killed(.forceQuit),
            suspending: killed(.forceQuit), suspended: killed(.forceQuit),
            terminated: .rejected),
        row(.memoryPressureKill,
            notRunning: .rejected,
            active: killed(.memoryPressure), inactive: killed(.memoryPressure), background: killed(.memoryPressure),
            suspending: killed(.memoryPressure), suspended: killed(.memoryPressure),
            terminated: .rejected),
        row(.reclaimRequested,
            notRunning: .rejected, active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, // not stopped yet
            suspended: .stay([.reclaim]),
            terminated: .rejected),
        // Like reclaim: a stop the kernel has not confirmed yet is not paged out.
        row(.hibernateRequested,
            notRunning: .rejected, active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected,
            suspended: .stay([.hibernate]),
            terminated: .rejected),
    ]

    // MARK: The app's own messages

    static let appRows: [MatrixRow] = [
        // Nothing is in flight in any of these phases: a stray acknowledgement changes nothing.
        row(.acknowledged(eventID: 999),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // Free in the foreground; in the background only while budget is left, and a
        // suspension ends the budget.
        row(.beginBackgroundTask(name: "sync"),
            notRunning: .stay([.taskRefused]),
            active: .stay([.taskBegan]), inactive: .stay([.taskBegan]), background: .stay([.taskBegan]),
            suspending: .stay([.taskRefused]), suspended: .stay([.taskRefused]),
            terminated: .stay([.taskRefused])),
        // The last task ended: suspended at once (seed 002).
        row(.endBackgroundTask(id: 1),
            notRunning: .rejected, active: .rejected, inactive: .rejected,
            background: .to(.suspending, Steps.suspend),
            suspending: .rejected, suspended: .rejected, terminated: .rejected),
        row(.setKeepAlive(.seconds(600)),
            notRunning: .rejected,
            active: .stay([.start(.keepAlive)]), inactive: .stay([.start(.keepAlive)]),
            background: .stay([.start(.keepAlive)]), suspending: .stay([.start(.keepAlive)]),
            suspended: .stay([.start(.keepAlive)]),
            terminated: .rejected),
        // Below iOS's floor of 600 s.
        row(.setKeepAlive(.seconds(599)),
            notRunning: .rejected, active: .rejected, inactive: .rejected, background: .rejected,
            suspending: .rejected, suspended: .rejected, terminated: .rejected),
        row(.setKeepAlive(nil),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // A call keeps the app running: one asked for just as a stop took hold resumes it.
        row(.setAudioSessionActive(true),
            notRunning: .rejected, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .to(.background, [.resume, .disarm]),
            suspended: .to(.background, [.resume, .disarm, .transition(.suspended, .background)]),
            terminated: .rejected),
        row(.setAudioSessionActive(false),
            notRunning: .rejected, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .rejected),
    ]

    // MARK: Timers

    static let timerRows: [MatrixRow] = [
        // Nothing is in flight: nothing to time out.
        row(.timerFired(.acknowledgement),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // Connected already (or never expected to): a late connect timer changes nothing.
        row(.timerFired(.connect),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // The background app has an open task, which outlasts the wake budget.
        row(.timerFired(.wakeBudget),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        row(.timerFired(.taskExpirationWarning),
            notRunning: .nothing, active: .nothing, inactive: .nothing,
            background: Cell.stay([.deliver(.backgroundTaskWillExpire), .start(.acknowledgement)]).unconnected(.nothing),
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        row(.timerFired(.taskBudget),
            notRunning: .nothing, active: .nothing, inactive: .nothing,
            background: .stay([.kill(.backgroundTaskExpired)]),
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // Re-armed while the app runs; a wake only in the background.
        row(.timerFired(.keepAlive),
            notRunning: .nothing,
            active: .stay([.start(.keepAlive)]), inactive: .stay([.start(.keepAlive)]),
            background: Cell.stay([.start(.keepAlive), .deliver(.keepAlive)]).unconnected(.stay([.start(.keepAlive)])),
            suspending: Cell.to(.background, [.start(.keepAlive)] + Steps.wake(from: .background) + [.deliver(.keepAlive)])
                .unconnected(.to(.background, [.start(.keepAlive)] + Steps.wake(from: .background))),
            suspended: Cell.to(.background, [.start(.keepAlive)] + Steps.wake(from: .suspended) + [.deliver(.keepAlive)])
                .unconnected(.to(.background, [.start(.keepAlive)] + Steps.wake(from: .suspended))),
            terminated: .nothing),
        // No relaunch is scheduled in any of these phases.
        row(.timerFired(.relaunchThrottle),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        row(.timerFired(.callLimit),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        row(.timerFired(.reclaim),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .stay([.reclaim]), terminated: .nothing),
        row(.timerFired(.hibernate),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .stay([.hibernate]), terminated: .nothing),
        // Questionable, left as it is: the grace timer kills even when no termination is
        // pending (it is only ever started for one, and cancelled on every launch).
        row(.timerFired(.exitGrace),
            notRunning: .nothing,
            active: killed(.terminated), inactive: killed(.terminated), background: killed(.terminated),
            suspending: killed(.terminated), suspended: killed(.terminated),
            terminated: .nothing),
    ]

    // MARK: The system: sockets, the screen, the daemon

    static let systemRows: [MatrixRow] = [
        // Data for a dead app relaunches it in the background; a stopped app is woken; a
        // running app reads its own sockets.
        row(.socketReady(sipData),
            notRunning: .stay([.launch(inBackground: true)]),
            active: .nothing, inactive: .nothing, background: .nothing,
            suspending: Cell.to(.background, Steps.wake(from: .background) + [.deliver(.voipSocketReadable)])
                .unconnected(.to(.background, Steps.wake(from: .background))),
            suspended: Cell.to(.background, Steps.wake(from: .suspended) + [.deliver(.voipSocketReadable)])
                .unconnected(.to(.background, Steps.wake(from: .suspended))),
            terminated: .stay([.launch(inBackground: true)])),
        // Transfer events for an app: sent to a running one, a stopped one woken for them, a
        // dead one relaunched in the background (these apps can be launched).
        row(.transferEventsReady(delivery: 7),
            notRunning: .stay([.launch(inBackground: true)]),
            active: Cell.stay([.deliver(.backgroundTransferEvents)]).unconnected(.nothing),
            inactive: Cell.stay([.deliver(.backgroundTransferEvents)]).unconnected(.nothing),
            background: Cell.stay([.deliver(.backgroundTransferEvents)]).unconnected(.nothing),
            suspending: Cell.to(.background, Steps.wake(from: .background) + [.deliver(.backgroundTransferEvents)])
                .unconnected(.to(.background, Steps.wake(from: .background))),
            suspended: Cell.to(.background, Steps.wake(from: .suspended) + [.deliver(.backgroundTransferEvents)])
                .unconnected(.to(.background, Steps.wake(from: .suspended))),
            terminated: .stay([.launch(inBackground: true)])),
        row(.heldSocketsChanged(0),
            notRunning: .stay([.disarm]),
            active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing,
            terminated: .stay([.disarm])),
        // Only an adopted program waits to be measured quiet; these apps are not adopted.
        row(.quietMeasured,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // A socket added to a stopped app (its request read after the stop) is watched too.
        row(.heldSocketsChanged(2),
            notRunning: .stay([.arm]),
            active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .stay([.arm]), suspended: .stay([.arm]),
            terminated: .stay([.arm])),
        // iOS reclaimed a suspended app's sockets when the screen locked; a stop not yet
        // confirmed reclaims when it is.
        row(.screenLocked,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .stay([.reclaim]), terminated: .nothing),
        row(.screenUnlocked,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // A new policy takes effect from the next step of the walk to the goal: an app kept
        // running by a background task stays so, a stopped one is not resumed for it.
        row(.policyChanged(AppPolicy(exitsOnSuspend: true, canLaunch: true, runsInBackground: true)),
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .nothing, suspended: .nothing, terminated: .nothing),
        // Nothing may be left stopped.
        row(.shutdown,
            notRunning: .nothing, active: .nothing, inactive: .nothing, background: .nothing,
            suspending: .to(.background, [.resume]),
            suspended: .to(.background, [.resume, .transition(.suspended, .background)]),
            terminated: .nothing),
    ]
}
