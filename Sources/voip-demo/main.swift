import Glibc

// voip-demo: the softphone demo. See DemoOptions.usage.

signal(SIGPIPE, SIG_IGN)
let options: DemoOptions
do {
    options = try DemoOptions(parsing: Array(CommandLine.arguments.dropFirst()))
} catch {
    print("voip-demo: \(error)\n\n\(DemoOptions.usage)")
    exit(2)
}
if options.showHelp {
    print(DemoOptions.usage)
    exit(0)
}
exit(DemoRun(options: options).run())
