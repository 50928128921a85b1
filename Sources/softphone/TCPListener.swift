import Glibc
import SIP

/// The softphone's listening TCP socket (`--listen`): where a registrar that does not reuse
/// the phone's own connection opens a new one to deliver a request. The object owns the
/// descriptor and closes it when it goes.
///
/// Unlike the other SIP sockets it is non-blocking, so that an accept() after a connection
/// vanished cannot block: voipd, which may hold a duplicate (and shares the file status
/// flags), only watches a listening socket and never accepts on it.
final class TCPListener {
    let fd: Int32
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
        self.fd = fd
    }

    /// Takes ownership of a listening socket (one voipd handed back).
    init(adopting fd: Int32) throws(NetworkError) {
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        do {
            localAddress = try SIPSocketAddress.of(socket: fd)
        } catch {
            close(fd)
            throw NetworkError("getsockname", reason: "\(error)")
        }
    }

    deinit { close(fd) }

    /// Accepts every connection waiting now, with Nagle's algorithm off.
    func acceptPending() throws(NetworkError) -> [TCPConnection] {
        var accepted: [TCPConnection] = []
        while true {
            // Glibc's module has no accept4; the softphone runs no other thread that could
            // exec between the accept and the fcntl.
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else {
                switch errno {
                // Gone before it was accepted, or taken meanwhile: nothing to accept.
                case EAGAIN, EWOULDBLOCK, ECONNABORTED, EINTR, EPROTO: return accepted
                default: throw NetworkError("accept")
                }
            }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            // Blocking, like the connections the softphone opens itself (a connection does
            // not inherit the listener's O_NONBLOCK on Linux; said here to be sure).
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) & ~O_NONBLOCK)
            var yes: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            accepted.append(TCPConnection(adopting: connection))
        }
    }
}
