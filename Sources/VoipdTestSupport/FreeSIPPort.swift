import Glibc
import VoipdSystem

/// A loopback port free for UDP and for a TCP listener, with the next one free for TCP too:
/// what baresip takes for its SIP (UDP and TCP on one port, a TLS listener on the next),
/// for the demo and benchmarks that run it outside a network namespace of their own. Free
/// when this returns; another process may still take it before baresip binds it.
public func freeSIPPortPair(attempts: Int = 20) throws -> UInt16 {
    for _ in 0..<attempts {
        let listener = try Socket.listenTCP(host: "127.0.0.1", port: 0)
        let port = try Socket.localPort(listener)
        guard port < UInt16.max, (try? Socket.listenTCP(host: "127.0.0.1", port: port + 1)) != nil,
              (try? Socket.bindUDP(host: "127.0.0.1", port: port)) != nil else { continue }
        return port
    }
    throw Errno(EADDRINUSE, call: "bind (no free loopback port pair in \(attempts) tries)")
}
