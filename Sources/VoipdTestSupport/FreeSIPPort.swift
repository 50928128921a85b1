import Glibc
import VoipdSystem

/// A loopback port free for a TCP listener, and with `udp` for UDP too; with `nextForTCP`,
/// the next port is free for TCP as well. The kernel picks it; it is free when this returns,
/// but another process may still take it before the program it is meant for binds it.
public func freeLoopbackPort(udp: Bool = false, nextForTCP: Bool = false, attempts: Int = 20) throws -> UInt16 {
    for _ in 0..<attempts {
        let listener = try Socket.listenTCP(host: "127.0.0.1", port: 0)
        let port = try Socket.localPort(listener)
        if nextForTCP {
            guard port < UInt16.max, (try? Socket.listenTCP(host: "127.0.0.1", port: port + 1)) != nil else { continue }
        }
        if udp {
            guard (try? Socket.bindUDP(host: "127.0.0.1", port: port)) != nil else { continue }
        }
        return port
    }
    throw Errno(EADDRINUSE, call: "bind (no free loopback port in \(attempts) tries)")
}

/// What baresip takes for its SIP (UDP and TCP on one port, a TLS listener on the next),
/// for the demo and benchmarks that run it outside a network namespace of their own.
public func freeSIPPortPair(attempts: Int = 20) throws -> UInt16 {
    try freeLoopbackPort(udp: true, nextForTCP: true, attempts: attempts)
}
