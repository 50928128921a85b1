import Glibc

/// What became of one start of a program that binds its port itself.
public enum PortBindOutcome<Started> {
    /// It bound the port and runs: what the start made of it.
    case bound(Started)
    /// It could not bind the port and ended before doing anything else (exit status 98,
    /// "Address already in use" in its log): another process took the port between the probe
    /// and the program's bind. `detail`: what it said, for the error if every port is taken.
    case addressInUse(String)
}

extension PortBindOutcome {
    /// The same outcome, what the start made of it changed by `transform`.
    public func map<Other>(_ transform: (Started) throws -> Other) rethrows -> PortBindOutcome<Other> {
        switch self {
        case .bound(let started): .bound(try transform(started))
        case .addressInUse(let detail): .addressInUse(detail)
        }
    }
}

/// Every port tried was taken before the program could bind it.
public struct PortCollisions: Error, CustomStringConvertible {
    public let program: String
    /// Each port tried, in order, with what the program said of it.
    public let attempts: [(port: UInt16, detail: String)]

    public var description: String {
        "\(program) could not bind its port \(attempts.count) times in a row (another process took each one first): "
            + attempts.map { "\($0.port): \($0.detail)" }.joined(separator: "; ")
    }
}

/// Starts a program that binds a port itself and cannot be handed a bound socket (baresip,
/// Kamailio): `start` on a port from `pickPort`, and, while the program reports the address
/// in use, again on a new one, at most `attempts` times in all. A probe's free port is free
/// only when the probe releases it; another process on the machine may bind it before the
/// program does, and then nothing but a new port helps.
/// - Throws: ``PortCollisions`` when every attempt collided; whatever `pickPort` or `start`
///   throws (a failure that is not a collision is not retried).
public func startOnFreePort<Started>(_ program: String, attempts: Int = 5, pickPort: () throws -> UInt16,
                                     start: (UInt16) throws -> PortBindOutcome<Started>) throws -> Started {
    precondition(attempts > 0, "at least one attempt")
    var collisions: [(port: UInt16, detail: String)] = []
    while collisions.count < attempts {
        let port = try pickPort()
        switch try start(port) {
        case .bound(let started): return started
        case .addressInUse(let detail): collisions.append((port, detail))
        }
    }
    throw PortCollisions(program: program, attempts: collisions)
}

/// What a program that failed to bind says on Linux: EADDRINUSE as its exit status, or
/// strerror(EADDRINUSE) in its log.
public func reportsAddressInUse(exitStatus: Int32?, log: String) -> Bool {
    exitStatus == EADDRINUSE || log.contains(String(cString: strerror(EADDRINUSE)))
}

/// The line of a program's `log` that says its address is in use (strerror(EADDRINUSE)):
/// what a ``PortCollisions`` error quotes of it.
public func addressInUseLine(in log: String) -> String? {
    let inUse = String(cString: strerror(EADDRINUSE))
    return log.split(separator: "\n").first { $0.contains(inUse) }.map(String.init)
}
