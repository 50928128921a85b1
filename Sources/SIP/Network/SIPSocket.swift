#if canImport(Glibc)
import Glibc
#endif
import VoipdSystem

/// Thin wrappers over the IPv4 TCP socket calls the registrar (and tests) need.
enum SIPSocket {
    /// A listening socket on `host:port` (0 for an ephemeral port) and the port it got.
    static func listen(host: String, port: UInt16, backlog: Int32 = 64) throws(SIPSocketError) -> (fd: Int32, port: UInt16) {
        let fd = try makeSocket()
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        do throws(SIPSocketError) {
            var address = try socketAddress(host: host, port: port)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard result == 0 else { throw SIPSocketError("bind \(host):\(port)") }
            guard Glibc.listen(fd, backlog) == 0 else { throw SIPSocketError("listen") }
            return (fd, try localPort(fd))
        } catch {
            close(fd)
            throw error
        }
    }

    /// A blocking connection to `host:port`, with Nagle's algorithm off.
    static func connect(host: String, port: UInt16) throws(SIPSocketError) -> Int32 {
        let fd = try makeSocket()
        do throws(SIPSocketError) {
            var address = try socketAddress(host: host, port: port)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard result == 0 else { throw SIPSocketError("connect \(host):\(port)") }
            setNoDelay(fd)
            return fd
        } catch {
            close(fd)
            throw error
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
    static func peerName(_ fd: Int32) -> String {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard result == 0 else { return "?" }
        return describe(address)
    }

    static func localPort(_ fd: Int32) throws(SIPSocketError) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw SIPSocketError("getsockname") }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func makeSocket() throws(SIPSocketError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SIPSocketError("socket") }
        return fd
    }

    private static func setNoDelay(_ fd: Int32) {
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func socketAddress(host: String, port: UInt16) throws(SIPSocketError) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw SIPSocketError("inet_pton \(host)", errno: EINVAL) }
        return address
    }

    private static func describe(_ address: sockaddr_in) -> String {
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        var inAddress = address.sin_addr
        inet_ntop(AF_INET, &inAddress, &text, socklen_t(INET_ADDRSTRLEN))
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(host):\(UInt16(bigEndian: address.sin_port))"
    }
}
