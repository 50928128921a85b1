import Glibc

/// The package's other executables, built next to this one.
enum Executables {
    /// The directory of the running executable (/proc/self/exe).
    static let directory: String = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return "." }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    }()

    /// The path of `name` beside this executable, if it is there and executable.
    static func path(_ name: String) throws(DemoFailure) -> String {
        let path = directory + "/" + name
        guard access(path, X_OK) == 0 else {
            throw DemoFailure("\(path) is missing: build the package (swift build) or run the demo with swift run voip-demo")
        }
        return path
    }
}
