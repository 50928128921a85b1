import Glibc
import VoipdSystem
import VoipdVocabulary

/// The TCP socket calls the registrar (and tests) need, through the system layer.
enum SIPSocket {
    /// A non-blocking listening socket on `host:port` (0 for an ephemeral port; see
    /// ``Socket/localPort(_:)``).
    static func listen(host: String, port: UInt16, backlog: Int32 = 64) throws(SIPSocketError) -> FileDescriptor {
        guard let address = SIPSocketAddress(numericHost: host, port: port) else { throw SIPSocketError("\(host) is not a numeric address", errno: EINVAL) }
        do throws(Errno) {
            return try Socket.listenTCP(at: address, backlog: backlog, nonBlocking: true)
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// The port a socket is bound to.
    static func localPort(_ socket: borrowing FileDescriptor) throws(SIPSocketError) -> UInt16 {
        do throws(Errno) {
            return try Socket.localPort(socket)
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// A blocking connection to `host:port`, with Nagle's algorithm off.
    static func connect(host: String, port: UInt16) throws(SIPSocketError) -> FileDescriptor {
        guard let address = SIPSocketAddress(numericHost: host, port: port) else { throw SIPSocketError("\(host) is not a numeric address", errno: EINVAL) }
        do throws(Errno) {
            return try Socket.connectTCP(to: address)
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// Accepts one pending connection, non-blocking and close-on-exec from the start
    /// (`accept4`), with Nagle's algorithm off; nil when none is pending.
    static func accept(_ listener: borrowing FileDescriptor) throws(SIPSocketError) -> FileDescriptor? {
        do throws(Errno) {
            guard case .processed(let connection) = try Socket.accept(listener) else { return nil }
            try Socket.setNoDelay(connection)
            return connection
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// `ip:port` of the peer, for logs.
    static func peerName(_ connection: borrowing FileDescriptor) -> String {
        do {
            return try Socket.peerEndpoint(of: connection)?.description ?? "?"
        } catch {
            return "?"
        }
    }
}
