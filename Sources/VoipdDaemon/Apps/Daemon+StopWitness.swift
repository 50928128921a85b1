import VoipdSystem

/// How voipd can tell, later, that someone else continued a process it stopped with SIGSTOP
/// (``AppProcess/stopEvidence``): set when voipd confirms the stop, dropped when voipd
/// continues the process itself.
enum StopEvidence {
    /// voipd's child: the kernel keeps a "continued" report from anyone's SIGCONT until a
    /// wait takes it or the child stops again (`waitid(WCONTINUED | WNOHANG)`, 0.3 µs, and
    /// nothing at the stop). A SIGCONT followed by someone's SIGSTOP leaves none.
    case continuedReport
    /// Any other process: its main thread's run count at the stop (two reads of /proc, tens
    /// of µs), which also shows a process that ran and was stopped again.
    case witness(StopWitness)

    /// The evidence for `process`, stopped now; nil if it is not stopped (or gone).
    init?(stopped process: AppProcess) {
        if process.isChild {
            self = .continuedReport
        } else if let witness = StopWitness(stoppedProcess: process.pid) {
            self = .witness(witness)
        } else {
            return nil
        }
    }
}

/// Anyone's `SIGCONT` resumes a process stopped with `SIGSTOP` (a shell's `fg`, `kill -CONT`,
/// a debugger), and the app then runs behind voipd's back. voipd looks for that where it
/// looks at a suspended app anyway (`status`, a resume that is not a wake on data: a
/// keep-alive, the foreground), never on the wake path. The cgroup freezer has no such hole:
/// no signal thaws a frozen cgroup.
extension Daemon {
    /// Checks a suspended app's ``StopEvidence`` and says what it finds. An app found running
    /// is stopped again (`restop`): voipd's record says suspended, and its held sockets,
    /// armed, are what wake it.
    func noticeUnexpectedResume(of app: AppRecord, restop: Bool) {
        guard let process = app.process, process.cgroup == nil else { return }
        guard let evidence = process.stopEvidence else {
            // Stopped again after an earlier finding: evidence taken anew once the stop has landed.
            if restop && app.lifecycle.phase == .suspended && ProcFS.state(of: process.pid) == "T" {
                process.stopEvidence = StopEvidence(stopped: process)
            }
            return
        }
        let finding: StopCheck
        switch evidence {
        case .continuedReport:
            do {
                finding = try process.pidfd.takeContinuedReport() ? .resumed(state: ProcFS.state(of: process.pid) ?? "?") : .stillStopped
            } catch {
                // ECHILD: reaped, its end on its way.
                return
            }
        case .witness(let witness):
            finding = witness.check()
        }
        switch finding {
        case .stillStopped, .gone:
            return
        case .resumed, .ranAndStoppedAgain:
            process.stopEvidence = nil
            let action = !restop ? "" : finding == .ranAndStoppedAgain ? "; it is stopped again" : "; stopping it again"
            log.warning("\(app.name): pid \(process.pid) \(finding) while voipd had it suspended (a SIGCONT not voipd's: a shell's fg, kill -CONT, a debugger)\(action)")
            guard restop else { return }
            if finding == .ranAndStoppedAgain {
                process.stopEvidence = StopEvidence(stopped: process)
                return
            }
            do {
                try suspender.suspend(process)
            } catch Errno.noSuchProcess {
                // Ended: its end comes through its pidfd.
                return
            } catch {
                // Running, with voipd's record saying suspended: its lifecycle ends it.
                log.warning("\(app.name): cannot stop pid \(process.pid) again: \(error); it is ended instead")
                feedLater(app, .stopFailed("\(error)"))
            }
        }
    }
}
