/// A benchmark subcommand's life: its options parsed, then the run. A usage error with no
/// text is `--help` (the usage on standard output, status 0); any other is status 2 with
/// the usage on standard error; a failed run is status 1, said on standard error.
func runSubcommand<Options: SubcommandOptions>(_ name: String, arguments: [String], run: (Options) throws -> Void) -> Int32 {
    let options: Options
    do {
        options = try OptionReader.parse(arguments)
    } catch {
        let message = "\(error)"
        guard !message.isEmpty else {
            print(Options.usage)
            return 0
        }
        writeError("voipd-bench \(name): \(message)\n\(Options.usage)\n")
        return 2
    }
    do {
        try run(options)
        return 0
    } catch {
        progress("failed: \(error)")
        return 1
    }
}
