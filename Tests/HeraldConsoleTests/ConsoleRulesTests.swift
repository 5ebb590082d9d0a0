import HeraldConsoleCore
import HeraldStore
import Testing

@Suite("The console's rules, without a server")
struct ConsoleRulesTests {
    @Test(
        "A viewer only looks; an operator also acts",
        arguments: [
            (OperatorRole.viewer, ConsoleAction.view, true),
            (.viewer, .deactivateDevice, false),
            (.viewer, .startSimulation, false),
            (.operator, .view, true),
            (.operator, .deactivateDevice, true),
            (.operator, .startSimulation, true),
        ]
    )
    func permissions(role: OperatorRole, action: ConsoleAction, allowed: Bool) {
        #expect(role.may(action) == allowed)
    }

    @Test("Failed sign-ins for a name are throttled after the limit, until the first leaves the window")
    func throttleByName() {
        var limits = SignInThrottle.Limits()
        limits.attempts = 3
        limits.window = .seconds(60)
        var throttle = SignInThrottle(limits: limits)
        for second in 0..<3 {
            #expect(throttle.decide(name: "alice", address: "10.0.0.\(second)", now: Int64(second) * 1000) == .allowed)
            throttle.recordFailure(name: "alice", address: "10.0.0.\(second)", now: Int64(second) * 1000)
        }
        // The fourth, from yet another address, is refused until 60 s after the first failure.
        #expect(throttle.decide(name: "Alice", address: "10.0.0.9", now: 10_000) == .refused(retryAfter: .seconds(50)))
        #expect(throttle.decide(name: "bob", address: "10.0.0.9", now: 10_000) == .allowed)
        #expect(throttle.decide(name: "alice", address: "10.0.0.9", now: 60_001) == .allowed)
    }

    @Test("One address is throttled across names; a success forgets the name's failures only")
    func throttleByAddress() {
        var limits = SignInThrottle.Limits()
        limits.attempts = 10
        limits.addressAttempts = 4
        var throttle = SignInThrottle(limits: limits)
        for index in 0..<3 { throttle.recordFailure(name: "user\(index)", address: "192.0.2.1", now: 0) }
        throttle.recordFailure(name: "carol", address: "192.0.2.1", now: 0)
        throttle.recordSuccess(name: "carol")
        if case .refused = throttle.decide(name: "dave", address: "192.0.2.1", now: 1) {
        } else {
            Issue.record("the address's fifth attempt was allowed")
        }
        #expect(throttle.decide(name: "dave", address: "192.0.2.2", now: 1) == .allowed)
    }

    @Test("The throttle remembers a bounded number of names and addresses")
    func throttleCapacity() {
        var limits = SignInThrottle.Limits()
        limits.attempts = 1
        limits.capacity = 10
        var throttle = SignInThrottle(limits: limits)
        throttle.recordFailure(name: "first", address: "a0", now: 0)
        for index in 1...20 { throttle.recordFailure(name: "n\(index)", address: "a\(index)", now: 0) }
        // Forgotten: the oldest name no longer holds back its owner.
        #expect(throttle.decide(name: "first", address: "fresh", now: 1) == .allowed)
        #expect(throttle.decide(name: "n20", address: "fresh", now: 1) != .allowed)
    }

    @Test("A session's token: its cookie value round-trips, its id is a digest, its form tokens differ by purpose")
    func tokens() throws {
        let token = ConsoleToken.random()
        let again = try #require(ConsoleToken(cookieValue: token.cookieValue))
        #expect(again == token)
        #expect(token.sessionID.count == 64)
        #expect(!token.sessionID.contains(token.cookieValue))
        let form = token.formToken(.session)
        #expect(token.accepts(form, for: .session))
        #expect(!token.accepts(form, for: .signIn))
        #expect(!ConsoleToken.random().accepts(form, for: .session))
        #expect(!token.accepts(nil, for: .session))
        #expect(!token.accepts("not base64url!", for: .session))
        #expect(ConsoleToken(cookieValue: "short") == nil)
        #expect(ConsoleToken(cookieValue: String(repeating: "*", count: 43)) == nil)
    }

    @Test("Cookies are scoped to the console, HttpOnly and SameSite=Strict; Secure over TLS")
    func cookies() {
        let plain = ConsoleCookie(name: ConsoleCookie.session, value: "v", maxAge: 60, secure: false)
        #expect(plain.header == "herald_console=v; Path=/console; Max-Age=60; HttpOnly; SameSite=Strict")
        let secure = ConsoleCookie.deleting(ConsoleCookie.session, secure: true)
        #expect(secure.header == "herald_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure")
    }

    @Test("Text in markup is escaped")
    func escaping() {
        #expect(HTMLText.escape(#"<b a="1">'&'</b>"#) == "&lt;b a=&quot;1&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;")
    }
}
