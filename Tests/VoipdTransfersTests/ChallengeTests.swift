import Foundation
import Testing
import VoipdTransfers

/// 401 challenges: the app is resumed to answer, and the answer decides.
@Suite("Authentication challenges")
struct ChallengeTests {
    private let unauthorized = HTTPResponseHead(status: 401, headers: ["WWW-Authenticate": "Basic realm=\"uploads\", charset=\"UTF-8\""])

    @Test("a 401 with WWW-Authenticate becomes a challenge event")
    func challengeEvent() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let step = driver.challenge(id, with: unauthorized)
        let challenge = step.delivery?.events.first?.challenge
        #expect(challenge?.scheme == "Basic")
        #expect(challenge?.realm == "uploads")
        #expect(challenge?.previousFailureCount == 0)
        #expect(challenge?.response.status == 401)
    }

    @Test("answered with a credential, the task runs again at once with Basic authorization")
    func credential() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        let delivery = driver.challenge(id, with: unauthorized).delivery!
        driver.feed(.eventsHandled(app: Driver.app, delivery.id))
        let step = driver.feed(.answerChallenge(Driver.session, id, .useCredential(user: "alice", password: "s3cret")))
        #expect(step.reply == .done)
        #expect(step.started.first?.request.headers["Authorization"] == "Basic YWxpY2U6czNjcmV0")
        #expect(driver.complete(id).delivery?.events.first?.completion?.error == nil)
    }

    @Test("a refused credential challenges again with a failure count; the credential is not kept")
    func refused() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.challenge(id, with: unauthorized)
        driver.feed(.answerChallenge(Driver.session, id, .useCredential(user: "alice", password: "wrong")))
        let again = driver.challenge(id, with: unauthorized)
        #expect(again.delivery?.events.first?.challenge?.previousFailureCount == 1)
        #expect(driver.task(id)?.credential == nil)
    }

    @Test("cancel ends the task as cancelled; default handling ends it with the 401")
    func otherAnswers() {
        var driver = Driver.withOpenSession()
        let a = driver.download("a").id
        let b = driver.download("b").id
        driver.challenge(a, with: unauthorized)
        driver.challenge(b, with: unauthorized)
        let cancelled = driver.feed(.answerChallenge(Driver.session, a, .cancel))
        #expect(cancelled.delivery?.events.first?.completion?.error == .cancelled)
        #expect(cancelled.discarded == [driver.task(a)!.partialPath!], "the partial file of the challenged download goes")
        let declined = driver.feed(.answerChallenge(Driver.session, b, .performDefaultHandling))
        #expect(declined.delivery?.events.first?.completion?.error == .http(status: 401))
        #expect(declined.delivery?.events.first?.completion?.response == unauthorized)
    }

    @Test("a credential with a colon in the user or control characters is refused")
    func badCredential() {
        var driver = Driver.withOpenSession()
        let id = driver.download("a").id
        driver.challenge(id, with: unauthorized)
        #expect(driver.feed(.answerChallenge(Driver.session, id, .useCredential(user: "a:b", password: "x"))).rejection == .invalidValue)
        #expect(driver.feed(.answerChallenge(Driver.session, id, .useCredential(user: "a", password: "x\ny"))).rejection == .invalidValue)
    }

    @Test("a 401 without WWW-Authenticate is an ordinary HTTP error")
    func plain401() {
        var driver = Driver.withOpenSession()
        #expect(HTTPResponseHead(status: 401).isChallenge == false)
        #expect(AuthenticationChallenge(response: HTTPResponseHead(status: 401), previousFailureCount: 0) == nil)
        let id = driver.download("a").id
        #expect(driver.complete(id, status: 401).delivery?.events.first?.completion?.error == .http(status: 401))
    }

    @Test("the challenge's scheme and realm are read from the header", arguments: [
        ("Basic realm=\"a b\"", "Basic", "a b"), ("Digest realm=x, nonce=\"1\"", "Digest", "x"), ("Bearer", "Bearer", nil),
        ("  Basic   realm=\"r\"", "Basic", "r"), ("Negotiate, Basic realm=\"r\"", "Negotiate", "r"),
    ] as [(String, String, String?)])
    func parsing(header: String, scheme: String, realm: String?) {
        let challenge = AuthenticationChallenge(response: HTTPResponseHead(status: 401, headers: ["WWW-Authenticate": header]), previousFailureCount: 0)
        #expect(challenge?.scheme == scheme)
        #expect(challenge?.realm == realm)
    }
}
