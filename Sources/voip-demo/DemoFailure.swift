/// Why the demo failed, in words for the person running it.
struct DemoFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
