/// This package's directory (where Deploy/ and Benchmarks/ are), from this file's place in
/// it: for the tests, the bench and the demo, which run from the package's build tree.
public let packageDirectory: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
    return path
}()
