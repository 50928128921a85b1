/// A command line read against ``VerbTable``: the verb, its options, its operands, and the
/// command after `--`. Options are looked for only before `--`, anywhere around the verb;
/// an option the table does not give the verb (or every verb) is a usage error.
struct ArgumentList {
    var verb: VerbSpec?
    /// Flags and options given in order, by their table name (`-f` is stored as `--follow`);
    /// a flag's value is empty. A list, not a dictionary: a command line has a few, and a
    /// `[String: [String]]` costs a `voipctl` run a look-up of `String: Hashable` among every
    /// protocol conformance the program has (8 % of a `voipctl status`).
    private var values: [(name: String, value: String)] = []
    var operands: [String] = []
    /// What came after `--`, if it came.
    var command: [String]?
    /// The first word that looked like a verb but is none (reported once the rest is read,
    /// so that `voipctl frobnicate --help` still says the verb is unknown).
    private(set) var unknownVerb: String?

    init(_ arguments: [String]) throws {
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                command = Array(arguments[index...])
                break
            }
            if argument.hasPrefix("-") && argument != "-" {
                guard let option = verb?.option(named: argument) ?? VerbTable.globalOption(named: argument) else {
                    throw UsageFailure(message: "unknown option \(argument)", verb: verb?.name)
                }
                var value = ""
                if option.value != nil {
                    guard index < arguments.endIndex, arguments[index] != "--" else {
                        throw UsageFailure(message: "\(option.name) needs a value", verb: verb?.name)
                    }
                    value = arguments[index]
                    index += 1
                }
                if flag(option.name) && !option.repeatable && option.value != nil {
                    throw UsageFailure(message: "\(option.name) given twice", verb: verb?.name)
                }
                values.append((option.name, value))
            } else if verb == nil && unknownVerb == nil {
                if let known = VerbTable.verb(named: argument) { verb = known } else { unknownVerb = argument }
            } else {
                operands.append(argument)
            }
        }
    }

    func flag(_ name: String) -> Bool { values.contains { $0.name == name } }

    func option(_ name: String) -> String? { values.last { $0.name == name }?.value }

    func repeatedOption(_ name: String) -> [String] { values.filter { $0.name == name }.map { $0.value } }
}
