import Glibc

/// Whether the tests run under CI (`CI=true`): there a missing tool is a failure, not a skip.
public let runningUnderCI = getenv("CI").map { String(cString: $0) == "true" } ?? false

/// Whether an executable exists at `path`.
public func toolExists(_ path: String) -> Bool { access(path, X_OK) == 0 }

/// For `.enabled(if:)`: run when the tool is there, and always under CI, where its absence
/// then fails the test instead of skipping it.
public func toolAvailableOrCI(_ path: String) -> Bool { toolExists(path) || runningUnderCI }

/// What went wrong in a test, or setting up a tool for a test or a benchmark.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
