import Testing
import VoipdVocabulary

@Suite("IP addresses")
struct IPAddressTests {
    @Test("IPv6 is written as RFC 5952 says: lowercase, the longest zero run compressed, the first of equal runs")
    func canonicalIPv6() {
        let cases = [
            ("2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
            ("0:0:0:0:0:0:0:0", "::"),
            ("::1", "::1"),
            ("1::", "1::"),
            ("2001:db8::0:0:1", "2001:db8::1"),
            ("::ffff:192.0.2.128", "::ffff:192.0.2.128"),
            ("::ffff:c000:280", "::ffff:192.0.2.128"),
            ("fe80::1:2:3:4:5", "fe80::1:2:3:4:5"),
        ]
        for (input, expected) in cases {
            #expect(IPAddress(input)?.description == expected, "\(input)")
        }
    }

    @Test("malformed addresses and host names are refused")
    func refused() {
        for text in ["", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-1", "::1::", ":::", "1:2:3:4:5:6:7:8:9", "12345::",
                     "g::1", "example.com", "1:2:3:4:5:6:7:1.2.3.4", "[::1]", "::1%lo", " 1.2.3.4"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
    }

    @Test("bytes round-trip in network order; IPv4-mapped unmaps to IPv4")
    func bytes() {
        let v4 = IPAddress(bytes: [192, 0, 2, 1])!
        #expect(v4.description == "192.0.2.1" && v4.family == .ipv4 && v4.bytes == [192, 0, 2, 1])
        let mapped = IPAddress("::ffff:192.0.2.1")!
        #expect(mapped.family == .ipv6 && mapped.unmapped == v4)
        #expect(IPAddress("2001:db8::1")!.bytes == [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress("0.0.0.0")!.isUnspecified && IPAddress("::")!.isUnspecified && !IPAddress("::1")!.isUnspecified)
    }

    @Test("prefixes: a network holds its addresses, mapped IPv4 included, and no other family's")
    func prefixes() {
        let address = IPAddress("10.1.2.3")!
        #expect(address.isIn(IPAddress("10.0.0.0")!, length: 8))
        #expect(!address.isIn(IPAddress("10.0.0.0")!, length: 16))
        #expect(address.isIn(IPAddress("0.0.0.0")!, length: 0))
        #expect(IPAddress("::ffff:10.1.2.3")!.isIn(IPAddress("10.1.0.0")!, length: 16))
        #expect(!address.isIn(IPAddress("::")!, length: 0))
        #expect(IPAddress("2001:db8:1::5")!.isIn(IPAddress("2001:db8::")!, length: 32))
        #expect(!IPAddress("2001:db9::5")!.isIn(IPAddress("2001:db8::")!, length: 32))
        #expect(IPAddress("2001:db8::8001")!.isIn(IPAddress("2001:db8::8000")!, length: 113))
        #expect(!IPAddress("2001:db8::8001")!.isIn(IPAddress("2001:db8::8000")!, length: 128))
    }
}
