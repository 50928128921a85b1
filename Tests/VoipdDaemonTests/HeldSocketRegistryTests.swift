import Testing
@testable import VoipdDaemon
import VoipdSystem

@Suite("Held-socket registry")
struct HeldSocketRegistryTests {
    private func socket(_ registry: HeldSocketRegistry, _ app: String, _ name: String, id: UInt64? = nil) throws -> HeldSocket {
        let pair = try Socket.pair()
        return HeldSocket(id: id ?? registry.makeID(), app: AppID(app), name: name, descriptor: pair.first, kind: "unix-stream",
                          origin: .registered, registeredAt: 0)
    }

    @Test("sockets are found by id and by app and name; each app's list is by name and follows insertions and removals")
    func lookups() throws {
        let registry = HeldSocketRegistry()
        for (app, name) in [("phone", "sip"), ("phone", "presence"), ("chat", "xmpp")] {
            registry.insert(try socket(registry, app, name))
        }
        #expect(registry.count == 3 && registry.count(of: "phone") == 2 && registry.count(of: "none") == 0)
        #expect(registry.sockets(of: "phone").map(\.name) == ["presence", "sip"])
        let sip = try #require(registry.socket(app: "phone", name: "sip"))
        #expect(registry.socket(id: sip.id) === sip)
        registry.insert(try socket(registry, "phone", "media"))
        #expect(registry.sockets(of: "phone").map(\.name) == ["media", "presence", "sip"])
        #expect(registry.remove(app: "phone", name: "presence")?.name == "presence")
        #expect(registry.remove(app: "phone", name: "presence") == nil)
        #expect(registry.sockets(of: "phone").map(\.name) == ["media", "sip"])
        #expect(registry.all.map { "\($0.app)/\($0.name)" } == ["chat/xmpp", "phone/media", "phone/sip"])
        #expect(registry.remove(app: "chat", name: "xmpp") != nil)
        #expect(registry.sockets(of: "chat").isEmpty && registry.count(of: "chat") == 0)
    }

    @Test("an app whose last socket went registers again from its kept entry; forgetting it drops only an empty one")
    func emptiedAndForgotten() throws {
        let registry = HeldSocketRegistry()
        registry.insert(try socket(registry, "phone", "sip"))
        registry.insert(try socket(registry, "chat", "xmpp"))
        #expect(registry.remove(app: "phone", name: "sip") != nil)
        #expect(registry.count(of: "phone") == 0 && registry.sockets(of: "phone").isEmpty && registry.socket(app: "phone", name: "sip") == nil)
        #expect(registry.all.map { "\($0.app)/\($0.name)" } == ["chat/xmpp"])
        let again = try socket(registry, "phone", "sip")
        registry.insert(again)
        #expect(registry.socket(app: "phone", name: "sip") === again && registry.socket(id: again.id) === again)
        #expect(registry.all.map { "\($0.app)/\($0.name)" } == ["chat/xmpp", "phone/sip"])
        registry.forget(app: "phone")
        #expect(registry.socket(app: "phone", name: "sip") === again, "an app holding a socket keeps it")
        #expect(registry.remove(app: "phone", name: "sip") === again)
        registry.forget(app: "phone")
        #expect(registry.count(of: "phone") == 0 && registry.sockets(of: "phone").isEmpty && registry.count == 1)
        registry.insert(try socket(registry, "phone", "media"))
        #expect(registry.sockets(of: "phone").map(\.name) == ["media"] && registry.count == 2)
    }

    @Test("ids are never reused, and ids carried over by an upgrade are reserved")
    func ids() throws {
        let registry = HeldSocketRegistry()
        let first = registry.makeID()
        let second = registry.makeID()
        #expect(second > first)
        registry.insert(try socket(registry, "phone", "carried", id: 40))
        registry.reserve(below: 41)
        #expect(registry.makeID() == 41)
        registry.reserve(below: 10)
        #expect(registry.makeID() == 42, "a lower reservation moves nothing back")
    }

    @Test("sockets inserted as a listing gives them keep that order; out of order, they are sorted as ever")
    func listedInsertion() throws {
        let listed = HeldSocketRegistry()
        let names = [("chat", "xmpp"), ("phone", "media"), ("phone", "sip"), ("video", "a")]
        listed.insert(listed: try names.map { try socket(listed, $0.0, $0.1) })
        #expect(listed.all.map { "\($0.app)/\($0.name)" } == ["chat/xmpp", "phone/media", "phone/sip", "video/a"])
        #expect(listed.sockets(of: "phone").map(\.name) == ["media", "sip"])
        listed.insert(try socket(listed, "phone", "presence"))
        #expect(listed.sockets(of: "phone").map(\.name) == ["media", "presence", "sip"])
        #expect(listed.all.count == 5)

        let shuffled = HeldSocketRegistry()
        shuffled.insert(listed: try [("phone", "sip"), ("chat", "xmpp"), ("phone", "media"), ("phone", "media2")].map { try socket(shuffled, $0.0, $0.1) })
        #expect(shuffled.all.map { "\($0.app)/\($0.name)" } == ["chat/xmpp", "phone/media", "phone/media2", "phone/sip"])
        #expect(shuffled.sockets(of: "phone").map(\.name) == ["media", "media2", "sip"])
    }
}
