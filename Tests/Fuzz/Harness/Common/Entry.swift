import Glibc

// libFuzzer's entry points. Each fuzz binary links this file with one target's files, which
// define `FuzzTarget`: `run` takes one input, `seeds` are the valid inputs the checked-in
// corpus starts from.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    FuzzTarget.run(input)
    return 0
}

/// With VOIPD_FUZZ_WRITE_SEEDS=DIR the binary writes its target's seeds into DIR and exits
/// (Tests/Fuzz/run.sh --seeds); otherwise libFuzzer goes on.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    guard let directory = getenv("VOIPD_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    for (name, bytes) in FuzzTarget.seeds {
        let path = directory + "/" + name
        guard let file = fopen(path, "wb") else { fatalError("cannot write \(path): errno \(errno)") }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count, fclose(file) == 0 else { fatalError("cannot write \(path): errno \(errno)") }
    }
    print("\(FuzzTarget.seeds.count) seeds written to \(directory)")
    exit(0)
}

/// A property that failed: libFuzzer saves the input that led here as a crash artifact.
func finding(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    let text = Array("FINDING at \(file):\(line): \(message())\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}

/// Checks a property of the code under test.
func require(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { finding(message(), file: file, line: line) }
}
