import SIP

/// The calls of one measurement: running and suspended alternately, one call each, so that
/// drift (the machine's load, caches, the registrar's tables) falls on both modes alike.
/// Every call is preceded by an OPTIONS the softphone answers and by the move into its
/// mode; the first `warmUp` calls of each mode are not kept.
struct SIPCallLoop {
    let connection: CallerConnection
    let configuration: SIPCaller.Configuration
    let softphone: SoftphoneUnderTest
    let modes: SoftphoneModes
    let registrar: RegistrarUnderTest

    /// INVITE → 180 latencies in nanoseconds, per mode.
    func run(calls: Int, warmUp: Int) throws -> (running: [UInt64], suspended: [UInt64]) {
        var running: [UInt64] = []
        var suspended: [UInt64] = []
        for index in 0..<(warmUp + calls) {
            let (foreground, stopped) = (try call(index, .running), try call(index, .suspended))
            if index >= warmUp {
                running.append(foreground)
                suspended.append(stopped)
            }
        }
        return (running, suspended)
    }

    private func call(_ index: Int, _ mode: SoftphoneModes.Mode) throws -> UInt64 {
        try modes.measureCall(index, to: softphone, in: mode, modeName: mode.rawValue, connection: connection,
                              configuration: configuration)
    }
}
