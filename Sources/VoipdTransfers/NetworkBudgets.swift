import FoundationEssentials

/// The daily network budget of discretionary transfers, one per network kind (seed 003:
/// "a system-wide resource budget mechanism which prevents it from using too much …
/// networking (WWAN and Wi-Fi, independently) in a given time period"; "around 5 GB per
/// day"; "things pick up again roughly 24 hours later").
///
/// A window opens with the first byte counted after the previous one closed and lasts
/// ``TransferConfiguration/budgetWindow``. Every transferred byte counts; only discretionary
/// tasks are held back once the window's budget is spent ("The budget always applies to
/// discretionary tasks"), until the window closes.
public struct NetworkBudgets: Codable, Hashable, Sendable {
    public struct Window: Codable, Hashable, Sendable {
        public var start: Date
        public var used: Int64
    }

    public private(set) var windows: [NetworkKind: Window] = [:]

    public init() {}

    /// The window in force for `kind` at `now`, if one is open.
    public func window(_ kind: NetworkKind, at now: Date, length: Double) -> Window? {
        guard let window = windows[kind], now < window.start.addingTimeInterval(length) else { return nil }
        return window
    }

    /// Counts `bytes` moved over `kind`.
    public mutating func record(_ bytes: Int64, on kind: NetworkKind, at now: Date, length: Double) {
        guard bytes > 0 else { return }
        var window = self.window(kind, at: now, length: length) ?? Window(start: now, used: 0)
        window.used += bytes
        windows[kind] = window
    }

    /// When `kind`'s budget is spent: the end of the window, when discretionary tasks may go
    /// again. nil while budget is left (or there is no budget for the kind).
    public func spentUntil(_ kind: NetworkKind, at now: Date, budget: Int64?, length: Double) -> Date? {
        guard let budget, let window = window(kind, at: now, length: length), window.used >= budget else { return nil }
        return window.start.addingTimeInterval(length)
    }

    /// Bytes used in `kind`'s open window.
    public func used(_ kind: NetworkKind, at now: Date, length: Double) -> Int64 {
        window(kind, at: now, length: length)?.used ?? 0
    }
}
