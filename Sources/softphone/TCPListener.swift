import Glibc
import SIP
import VoipdSystem

/// The softphone's listening TCP socket (`--listen`): where a registrar that does not reuse
/// the phone's own connection opens a new one to deliver a request. The object owns the
/// descriptor and closes it when it goes.
///
/// Unlike the other SIP sockets it is non-blocking, so that an accept() after a connection
/// vanished cannot block: voipd, which may hold a duplicate (and shares the file status
/// flags), only watches a listening socket and never accepts on it.
final class TCPListener {
    let descriptor: FileDescriptor
    var fd: Int32 { descriptor.rawValue }
    /// The address it listens on, with the port the kernel chose for port 0.
    let localAddress: SIPSocketAddress

    /// Listens on `address` (port 0 for an ephemeral port).
    init(address: SIPSocketAddress, backlog: Int32 = 16) throws(NetworkError) {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw NetworkError("socket") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        do throws(NetworkError) {
            guard address.withSocketAddress({ bind(fd, $0, $1) }) == 0 else { throw NetworkError("bind \(address)") }
            guard listen(fd, backlog) == 0 else { throw NetworkError("listen \(address)") }
            do {
                localAddress = try SIPSocketAddress.of(socket: fd)
            } catch {
                throw NetworkError("getsockname", reason: "\(error)")
            }
        } catch {
            close(fd)
            throw error
        }
        descriptor = FileDescriptor(adopting: fd)
    }

    /// Takes ownership of a listening socket (one voipd handed back).
    init(adopting fd: Int32) throws(NetworkError) {
        descriptor = FileDescriptor(adopting: fd)
        do {
            try descriptor.setNonBlocking()
            localAddress = try SIPSocketAddress.of(socket: fd)
        } catch {
            throw NetworkError("getsockname", reason: "\(error)")
        }
    }

    /// Accepts every connection waiting now, with Nagle's algorithm off.
    func acceptPending() throws(NetworkError) -> [TCPConnection] {
        var accepted: [TCPConnection] = []
        while true {
            // Close-on-exec from the start (accept4), and blocking, like the connections the
            // softphone opens itself.
            let connection: FileDescriptor
            do throws(Errno) {
                guard case .processed(let next) = try Socket.accept(descriptor, nonBlocking: false) else { return accepted }
                connection = next
            } catch .protocolError {
                // Gone before it was accepted: nothing to accept now.
                return accepted
            } catch {
                throw NetworkError(error.call, errno: error.rawValue)
            }
            do {
                try Socket.setNoDelay(connection)
            } catch {
                throw NetworkError(error.call, errno: error.rawValue)
            }
            accepted.append(TCPConnection(adopting: connection.release()))
        }
    }
}
