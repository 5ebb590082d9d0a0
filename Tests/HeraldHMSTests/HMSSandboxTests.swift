import Foundation
import HeraldHMSCore
import Testing

@testable import HeraldSandbox

/// The sandbox's Push Kit, in-process: its token endpoint, its `messages:send` answers and
/// delivery to emulated Huawei devices.
@Suite("Push Kit sandbox")
struct HMSSandboxTests {
    static let appID = "104857600"
    static let secret = String(repeating: "5ec2e7", count: 11)

    let clock = SandboxClock()
    let core: SandboxCore

    init() throws {
        var configuration = SandboxConfiguration(tls: HMSHarness.tls)
        configuration.hmsApps = [
            SandboxHMSApp(appID: Self.appID, clientSecret: Self.secret),
            SandboxHMSApp(appID: "200", clientSecret: "other-secret"),
        ]
        configuration.clock = clock
        configuration.hmsAccessTokenLifetime = .seconds(60)
        core = try SandboxCore(configuration: configuration)
    }

    private func grant(
        _ appID: String = HMSSandboxTests.appID,
        secret: String = HMSSandboxTests.secret
    ) throws -> String {
        let answer = core.hms.grantAccessToken(
            form: ["grant_type": "client_credentials", "client_id": appID, "client_secret": secret]
        )
        #expect(answer.status == 200)
        let token = try HMSTokenAnswer.decode(answer.body)
        #expect(token.expiresIn == 60 && token.tokenType == "Bearer")
        return try #require(token.accessToken)
    }

    private func device() throws -> (id: String, token: String) {
        let device = try core.registerDevice(bundleID: "com.example.chat", platform: .huawei, projectID: Self.appID)
        #expect(device.platform == .huawei && device.projectID == Self.appID)
        return (device.deviceID, try #require(device.messagingToken))
    }

    private func send(
        _ message: HMSMessage,
        bearer: String?,
        appID: String = HMSSandboxTests.appID
    ) throws -> (status: Int, answer: HMSSendAnswer, retryAfter: Int?) {
        let body = try JSONEncoder().encode(HMSSendRequest(message: message))
        let reply = core.hms.send(appID: appID, authorization: bearer.map { "Bearer " + $0 }, body: Array(body))
        return (reply.status, try JSONDecoder().decode(HMSSendAnswer.self, from: reply.body), reply.retryAfter)
    }

    private func message(
        to tokens: [String],
        ttl: String = "3600s",
        group: Int? = nil,
        data: String = #"{"k":"v"}"#
    )
        -> HMSMessage
    {
        HMSMessage(data: data, android: .init(urgency: .high, ttl: ttl, collapseKey: group), token: tokens)
    }

    @Test(
        "the token endpoint refuses as Huawei does: 400, error 1101, sub_error 12304",
        arguments: [
            (
                ["grant_type": "client_credentials", "client_id": HMSSandboxTests.appID, "client_secret": "wrong"],
                "invalid client_secret"
            ),
            (
                ["grant_type": "client_credentials", "client_id": "999", "client_secret": HMSSandboxTests.secret],
                "invalid client_id"
            ),
            (
                [
                    "grant_type": "password", "client_id": HMSSandboxTests.appID,
                    "client_secret": HMSSandboxTests.secret,
                ],
                "unsupported grant_type: password"
            ),
        ]
    )
    func tokenRefusals(form: [String: String], reason: String) throws {
        let answer = core.hms.grantAccessToken(form: form)
        #expect(answer.status == 400)
        #expect(try HMSTokenAnswer.decode(answer.body) == .refused(subError: 12304, reason))
        let record = try #require(core.hmsInspection().last)
        #expect(record.kind == .token && record.code == "1101" && record.outcome == "rejected")
        #expect(core.hmsAccessTokenGrants == 0)
    }

    @Test("credentials: none or another app's is 80200001; an expired token is 80200003")
    func credentials() throws {
        let (_, token) = try device()
        #expect(try send(message(to: [token]), bearer: nil).answer.resultCode == .oauthAuthenticationError)
        let other = try grant("200", secret: "other-secret")
        let foreign = try send(message(to: [token]), bearer: other)
        #expect(foreign.status == 401 && foreign.answer.resultCode == .oauthAuthenticationError)
        let bearer = try grant()
        #expect(try send(message(to: [token]), bearer: bearer).answer.resultCode == .success)
        clock.advance(by: .seconds(61))
        let expired = try send(message(to: [token]), bearer: bearer)
        #expect(expired.status == 401 && expired.answer.resultCode == .oauthTokenExpired)
        core.expireHMSAccessTokens()
        #expect(try send(message(to: [token]), bearer: try grant()).answer.resultCode == .success)
        #expect(core.hmsAccessTokenGrants == 3)
    }

    @Test("a partial success lists the illegal tokens; when none is live, 80300007 lists them all")
    func illegalTokens() throws {
        let bearer = try grant()
        let (_, live) = try device()
        let (gone, dead) = try device()
        try core.uninstall(deviceID: gone)
        let partial = try send(message(to: [live, dead, "forged"]), bearer: bearer)
        #expect(partial.status == 200 && partial.answer.resultCode == .partialSuccess)
        #expect(partial.answer.illegalTokens == [dead, "forged"])
        let none = try send(message(to: [dead]), bearer: bearer)
        #expect(none.status == 400 && none.answer.resultCode == .allTokensInvalid)
        #expect(none.answer.illegalTokens == [dead])
        let record = try #require(core.hmsInspection(token: live).last)
        #expect(record.delivery == ["stored"] && record.code == "80100000")
    }

    @Test("a token of another app is illegal for this one")
    func anotherAppsToken() throws {
        let device = try core.registerDevice(bundleID: "com.example.chat", platform: .huawei, projectID: "200")
        let token = try #require(device.messagingToken)
        #expect(try send(message(to: [token]), bearer: try grant()).answer.resultCode == .allTokensInvalid)
    }

    @Test("what the message rules refuse, with Huawei's code and status")
    func messageRules() throws {
        let bearer = try grant()
        let (_, token) = try device()
        let big = String(repeating: "x", count: 4097)
        let cases: [(HMSMessage, HMSResultCode, Int)] = [
            (message(to: [token], data: big), .bodyTooLarge, 413),
            (message(to: [token], ttl: "forever"), .invalidTTL, 400),
            (message(to: []), .tooManyTokens, 400),
            (message(to: [token], group: 200), .badMessageStructure, 400),
        ]
        for (message, code, status) in cases {
            let reply = try send(message, bearer: bearer)
            #expect(reply.answer.resultCode == code)
            #expect(reply.status == status)
        }
        let garbage = core.hms.send(appID: Self.appID, authorization: "Bearer " + bearer, body: Array("{".utf8))
        #expect(garbage.status == 400)
        let unread = core.hms.send(appID: Self.appID, authorization: "Bearer " + bearer, body: nil)
        #expect(unread.status == 413)
    }

    @Test("faults hit the next authorized sends: 503, 429 with Retry-After, 81000001, then the normal answer")
    func faults() throws {
        let bearer = try grant()
        let (_, token) = try device()
        try core.inject(hmsFault: SandboxHMSFault(kind: .flowControl))
        try core.inject(hmsFault: SandboxHMSFault(kind: .tooManyRequests, retryAfter: 7))
        try core.inject(hmsFault: SandboxHMSFault(kind: .internalError, token: token))
        // Unauthorized sends do not use a fault up.
        #expect(try send(message(to: [token]), bearer: nil).status == 401)
        #expect(try send(message(to: [token]), bearer: bearer).status == 503)
        let limited = try send(message(to: [token]), bearer: bearer)
        #expect(limited.status == 429 && limited.retryAfter == 7)
        let failed = try send(message(to: [token]), bearer: bearer)
        #expect(failed.status == 500 && failed.answer.resultCode == .internalError)
        #expect(try send(message(to: [token]), bearer: bearer).answer.resultCode == .success)
        #expect(core.hmsInspection().filter { $0.outcome == "injected" }.count == 3)
        #expect(throws: SandboxError.self) { try core.inject(hmsFault: SandboxHMSFault(kind: .flowControl, count: 0)) }
    }

    @Test("a connected device gets the message as an hms_message frame")
    func connectedDelivery() async throws {
        let bearer = try grant()
        let (id, token) = try device()
        var events = try core.connect(deviceID: id).makeAsyncIterator()
        #expect(await events.next() == .token(kind: .messaging, token: token))
        #expect(try send(message(to: [token]), bearer: bearer).answer.resultCode == .success)
        guard case .hmsMessage(let delivered)? = await events.next() else {
            Issue.record("expected an hms_message")
            return
        }
        #expect(delivered.data == #"{"k":"v"}"# && delivered.urgency == .high && delivered.token == token)
        let frame = try JSONSerialization.jsonObject(
            with: JSONEncoder().encode(SandboxDeviceEvent.hmsMessage(delivered))
        )
        #expect((frame as? [String: Any])?["type"] as? String == "hms_message")
        #expect(
            try JSONDecoder().decode(
                SandboxDeviceEvent.self,
                from: JSONEncoder().encode(SandboxDeviceEvent.hmsMessage(delivered))
            ) == .hmsMessage(delivered)
        )
        #expect(core.hmsInspection(token: token).last?.delivery == ["delivered"])
    }

    @Test("an offline device gets what was kept when it connects: one per collapse group, none past its ttl")
    func offlineKeeping() async throws {
        let bearer = try grant()
        let (id, token) = try device()
        _ = try send(message(to: [token], group: 3, data: #"{"n":"1"}"#), bearer: bearer)
        _ = try send(message(to: [token], group: 3, data: #"{"n":"2"}"#), bearer: bearer)
        _ = try send(message(to: [token], ttl: "10s", data: #"{"n":"short"}"#), bearer: bearer)
        _ = try send(message(to: [token], ttl: "0s", data: #"{"n":"now"}"#), bearer: bearer)
        _ = try send(message(to: [token], group: -1, data: #"{"n":"3"}"#), bearer: bearer)
        #expect(core.hmsInspection(token: token).compactMap(\.delivery?.first).last == "stored")
        #expect(core.hmsInspection(token: token)[3].delivery == ["discarded: device offline and ttl is 0s"])
        clock.advance(by: .seconds(11))
        let stream = try core.connect(deviceID: id)
        var received: [String] = []
        for await event in stream {
            if case .hmsMessage(let message) = event { received.append(message.data) }
            if received.count == 2 { break }
        }
        #expect(received == [#"{"n":"2"}"#, #"{"n":"3"}"#])
    }

    @Test("a Huawei device needs a registered app: the one there is, or the one named")
    func registration() throws {
        #expect(throws: SandboxError.self) {
            try core.registerDevice(bundleID: "com.example.chat", platform: .huawei)
        }
        #expect(throws: SandboxError.self) {
            try core.registerDevice(bundleID: "com.example.chat", platform: .huawei, projectID: "unknown")
        }
        let (_, expired) = try device()
        try core.expire(token: expired)
        #expect(try send(message(to: [expired]), bearer: try grant()).answer.resultCode == .allTokensInvalid)
        let (uninstalled, _) = try device()
        try core.checkConnectable(deviceID: uninstalled)
        try core.uninstall(deviceID: uninstalled)
        #expect(throws: SandboxError.self) { try core.checkConnectable(deviceID: uninstalled) }
    }
}
