import Glibc

/// Waits until one of `descriptors` is ready or `timeoutMilliseconds` have passed (`poll(2)`;
/// -1 waits for ever, 0 only looks): how many are ready. An interruption (EINTR) is 0 ready,
/// a turn of the caller's loop like a timeout, which decides what comes next.
public func poll(_ descriptors: inout [pollfd], timeoutMilliseconds: CInt) throws(Errno) -> Int {
    do {
        return Int(try valueOrErrno("poll", retryOnInterrupt: false) { Glibc.poll(&descriptors, nfds_t(descriptors.count), timeoutMilliseconds) })
    } catch .interrupted {
        return 0
    }
}

/// Waits until `descriptor` is readable (or has hung up) or `timeoutMilliseconds` have
/// passed (`poll(2)`): false on the timeout or an interruption.
public func waitReadable(_ descriptor: borrowing FileDescriptor, timeoutMilliseconds: CInt) throws(Errno) -> Bool {
    var watched = [pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)]
    return try poll(&watched, timeoutMilliseconds: timeoutMilliseconds) > 0
}
