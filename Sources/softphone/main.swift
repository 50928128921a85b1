import Glibc

// softphone: a SIP user agent over TCP or UDP under voipd (or on its own), or
// (`softphone call`) a caller.
// See Usage.swift for the command line.

signal(SIGPIPE, SIG_IGN)
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(Usage.text)
    exit(0)
}
do {
    if arguments.first == "call" {
        arguments.removeFirst()
        exit(CallCommand(options: try CallOptions(parsing: arguments)).run())
    }
    let options = try SoftphoneOptions(parsing: arguments)
    Log.write("start", "user \(options.user), registrar \(options.registrar) over \(options.transport)\(options.listen.map { ", listening at \($0)" } ?? "")\(options.presence.map { ", presence \($0)" } ?? "")")
    let phone: Softphone
    do {
        phone = try Softphone(options: options)
    } catch {
        Log.write("start", "cannot connect to voipd (start it under voipd: voipctl launch -- softphone ..., or run it with --unsupervised): \(error)")
        exit(1)
    }
    exit(phone.run())
} catch {
    let message = Array("softphone: \(error)\n\n\(Usage.text)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(2)
}
