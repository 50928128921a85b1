/// The outcome of an operation on a non-blocking descriptor, as NIO's `IOResult`: it was
/// done, or it would have had to wait (EAGAIN). The one way the system layer says "would
/// block": never nil, zero, an empty array or a thrown EAGAIN.
public enum IOResult<Value: ~Copyable>: ~Copyable {
    /// Done, with its result.
    case processed(Value)
    /// Nothing could be done without waiting; try again once the descriptor is ready.
    case wouldBlock
}

extension IOResult: Copyable where Value: Copyable {}

extension IOResult where Value: ~Copyable {
    /// The result, or nil when the operation would have blocked: for a caller that treats
    /// both alike (a loop that drains what is ready).
    public consuming func processed() -> Value? {
        switch consume self {
        case .processed(let value): return value
        case .wouldBlock: return nil
        }
    }
}
