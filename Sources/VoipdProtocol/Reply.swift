/// `reply` (type 128): the answer to the request with the same `id`. Either `ok` with a
/// `result`, or not `ok` with an `error`. A framing error that cannot be tied to a request
/// is answered with id 0.
public struct Reply<Result: Codable & Sendable>: Codable, Sendable {
    public var id: UInt64
    public var ok: Bool
    public var result: Result?
    public var error: ProtocolError?

    public init(id: UInt64, result: Result) {
        self.id = id
        self.ok = true
        self.result = result
        self.error = nil
    }

    public init(id: UInt64, error: ProtocolError) {
        self.id = id
        self.ok = false
        self.result = nil
        self.error = error
    }
}

/// The request id alone, read before the body's type is known.
public struct RequestID: Codable, Sendable {
    public var id: UInt64?
}
