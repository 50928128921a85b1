import Foundation
import Testing
import VoipdTestSupport

/// What voipd links: FoundationEssentials, never Foundation, FoundationNetworking or ICU
/// (docs/BENCHMARKS.md, "Start-up and memory at start"). HTTP belongs to the transfer agent,
/// `voipd-transfer`, which voipd starts and speaks to through a socket (docs/TRANSFERS.md).
@Suite("voipd's libraries")
struct DaemonLinkageTests {
    static let readelf = "/usr/bin/readelf"

    /// The shared objects `program` names as NEEDED.
    static func needed(_ program: String) throws -> [String] {
        let dynamic = try runCommand([readelf, "-dW", program])
        try #require(dynamic.status == 0, "readelf: \(dynamic.output)")
        return dynamic.output.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }

    @Test("voipd needs neither Foundation, FoundationNetworking nor ICU; the transfer agent has the networking",
          .enabled(if: toolAvailableOrCI(readelf), "needs readelf (binutils)"))
    func foundationEssentialsOnly() throws {
        let daemon = try Self.needed(Binaries.voipd)
        let heavy = daemon.filter {
            $0.hasPrefix("libFoundation.") || $0.hasPrefix("libFoundationNetworking") || $0.hasPrefix("libFoundationInternationalization")
                || $0.hasPrefix("libFoundationXML") || $0.contains("ICU") || $0.hasPrefix("libicu") || $0.hasPrefix("libcurl")
        }
        #expect(heavy.isEmpty, "voipd needs \(heavy) (all: \(daemon))")
        // With the Swift runtime linked dynamically (a debug build) it names what it uses.
        if daemon.contains(where: { $0.hasPrefix("libswiftCore") }) {
            #expect(daemon.contains("libFoundationEssentials.so"), "\(daemon)")
            #expect(try Self.needed(Binaries.path("voipd-transfer")).contains("libFoundationNetworking.so"))
        }
    }
}
