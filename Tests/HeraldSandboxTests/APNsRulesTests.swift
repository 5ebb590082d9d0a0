import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldSandbox
import NIOHTTP1
import Testing

/// Every rule of "Sending notification requests to APNs", over real HTTP/2 + TLS on loopback.
@Suite(.timeLimit(.minutes(2))) struct APNsRulesTests {
    @Test func anAcceptedPushAnswers200WithItsIDsAndIsRecorded() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            let apnsID = "8E1BB2A4-0C1D-4F5E-9A1B-2C3D4E5F6A7B"
            let given = try await sandbox.push(to: token, headers: [("apns-id", apnsID)])
            #expect(given.status == 200)
            #expect(given.body.isEmpty)
            #expect(given.headers.first(name: "apns-id") == apnsID)
            let uniqueID = try #require(given.headers.first(name: "apns-unique-id"))
            #expect(APNsUUID.isCanonical(uniqueID[...]))

            let made = try await sandbox.push(to: token)
            #expect(made.status == 200)
            let madeID = try #require(made.headers.first(name: "apns-id"))
            #expect(APNsUUID.isCanonical(madeID[...]))

            let records = sandbox.core.inspection(token: token)
            #expect(records.map(\.apnsID) == [apnsID, madeID])
            #expect(
                records.allSatisfy { $0.status == 200 && $0.outcome == "accepted" && $0.keyID == SandboxHarness.keyID }
            )
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let headers: [(String, String?)]
        var payload = #"{"aps":{"alert":"hello"}}"#
        var method: HTTPMethod = .POST
        var path: String? = nil
        var useVoIPToken = false
        let reason: APNsReason

        var testDescription: String { "\(name) → \(reason.rawValue)" }
    }

    static let cases: [Case] = [
        Case(name: "GET", headers: [], method: .GET, reason: .methodNotAllowed),
        Case(name: "DELETE", headers: [], method: .DELETE, reason: .methodNotAllowed),
        Case(name: "wrong path", headers: [], path: "/3/devices/abc", reason: .badPath),
        Case(name: "no version", headers: [], path: "/device/abc", reason: .badPath),
        Case(name: "empty token", headers: [], path: "/3/device/", reason: .missingDeviceToken),
        Case(name: "no authorization", headers: [("authorization", nil)], reason: .missingProviderToken),
        Case(name: "not bearer", headers: [("authorization", "basic abc")], reason: .invalidProviderToken),
        Case(name: "garbage token", headers: [("authorization", "bearer not.a.jwt")], reason: .invalidProviderToken),
        Case(name: "no topic", headers: [("apns-topic", nil)], reason: .missingTopic),
        Case(name: "unknown bundle", headers: [("apns-topic", "com.example.other")], reason: .badTopic),
        Case(name: "unknown push type", headers: [("apns-push-type", "banner")], reason: .invalidPushType),
        Case(name: "voip to the bundle topic", headers: [("apns-push-type", "voip")], reason: .topicDisallowed),
        Case(name: "priority 7", headers: [("apns-priority", "7")], reason: .badPriority),
        Case(name: "priority text", headers: [("apns-priority", "high")], reason: .badPriority),
        Case(
            name: "background at priority 10",
            headers: [("apns-push-type", "background"), ("apns-priority", "10")],
            payload: #"{"aps":{"content-available":1}}"#,
            reason: .badPriority
        ),
        Case(name: "expiration text", headers: [("apns-expiration", "tomorrow")], reason: .badExpirationDate),
        Case(name: "negative expiration", headers: [("apns-expiration", "-5")], reason: .badExpirationDate),
        Case(
            name: "collapse id of 65 bytes",
            headers: [("apns-collapse-id", String(repeating: "c", count: 65))],
            reason: .badCollapseId
        ),
        Case(name: "apns-id not a UUID", headers: [("apns-id", "1234")], reason: .badMessageId),
        Case(name: "empty body", headers: [], payload: "", reason: .payloadEmpty),
        Case(name: "JSON array body", headers: [], payload: "[1,2]", reason: .payloadEmpty),
        Case(name: "body not JSON", headers: [], payload: "hello", reason: .payloadEmpty),
        Case(name: "alert over 4096 bytes", headers: [], payload: Self.payload(size: 4097), reason: .payloadTooLarge),
        Case(
            name: "voip over 5120 bytes",
            headers: [("apns-push-type", "voip"), ("apns-topic", SandboxHarness.bundleID + ".voip")],
            payload: Self.payload(size: 5121),
            useVoIPToken: true,
            reason: .payloadTooLarge
        ),
        Case(name: "short token", headers: [], path: "/3/device/abcdef", reason: .badDeviceToken),
        Case(
            name: "unknown token",
            headers: [],
            path: "/3/device/" + String(repeating: "ab", count: 32),
            reason: .badDeviceToken
        ),
        Case(
            name: "messaging token on the voip topic",
            headers: [("apns-push-type", "voip"), ("apns-topic", SandboxHarness.bundleID + ".voip")],
            reason: .deviceTokenNotForTopic
        ),
        Case(name: "voip token on the bundle topic", headers: [], useVoIPToken: true, reason: .deviceTokenNotForTopic),
    ]

    /// A JSON object of exactly `size` bytes.
    static func payload(size: Int) -> String {
        let prefix = #"{"aps":{"alert":""#
        let suffix = #""}}"#
        return prefix + String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count) + suffix
    }

    @Test(arguments: cases)
    func eachRuleAnswersWithApplesStatusAndReason(_ rule: Case) async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(rule.useVoIPToken ? device.voipToken : device.messagingToken)
            let reply = try await sandbox.push(
                to: token,
                payload: rule.payload,
                headers: rule.headers,
                method: rule.method,
                path: rule.path
            )
            #expect(reply.status == rule.reason.status)
            #expect(reply.reason == rule.reason.rawValue)
            #expect(reply.headers.first(name: "content-type") == "application/json")
            let record = try #require(sandbox.core.inspection().last)
            #expect(record.reason == rule.reason.rawValue)
            #expect(record.outcome == "rejected")
        }
    }

    @Test func payloadsAtTheLimitsAreAccepted() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let alert = try await sandbox.push(
                to: try #require(device.messagingToken),
                payload: Self.payload(size: 4096)
            )
            #expect(alert.status == 200)
            let voip = try await sandbox.push(
                to: try #require(device.voipToken),
                payload: Self.payload(size: 5120),
                headers: [
                    ("apns-push-type", "voip"), ("apns-topic", SandboxHarness.bundleID + ".voip"),
                    ("apns-priority", "10"),
                ]
            )
            #expect(voip.status == 200)
            let collapse = try await sandbox.push(
                to: try #require(device.messagingToken),
                headers: [
                    ("apns-collapse-id", String(repeating: "c", count: 64)), ("apns-priority", "5"),
                    ("apns-expiration", "0"),
                ]
            )
            #expect(collapse.status == 200)
            let background = try await sandbox.push(
                to: try #require(device.messagingToken),
                payload: #"{"aps":{"content-available":1}}"#,
                headers: [("apns-push-type", "background"), ("apns-priority", "5")]
            )
            #expect(background.status == 200)
        }
    }

    @Test func aBundleOfAnotherTeamIsDisallowed() async throws {
        try await SandboxHarness.with { sandbox in
            try sandbox.core.register(app: SandboxApp(bundleID: "com.other.app", teamID: "OTHERTEAM1"))
            let device = try sandbox.core.registerDevice(bundleID: "com.other.app")
            let reply = try await sandbox.push(
                to: try #require(device.messagingToken),
                headers: [("apns-topic", "com.other.app")]
            )
            #expect(reply.status == 400)
            #expect(reply.reason == "TopicDisallowed")
        }
    }

    @Test func uninstalledTokensAnswer410WithTheUninstallTime() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            #expect(try await sandbox.push(to: token).status == 200)
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            try sandbox.core.uninstall(deviceID: device.deviceID)
            let after = Int64(Date().timeIntervalSince1970 * 1000)
            let reply = try await sandbox.push(to: token)
            #expect(reply.status == 410)
            #expect(reply.reason == "Unregistered")
            let timestamp = try #require(reply.timestamp)
            #expect(timestamp >= before && timestamp <= after)
            let voip = try await sandbox.push(
                to: try #require(device.voipToken),
                headers: [("apns-push-type", "voip"), ("apns-topic", SandboxHarness.bundleID + ".voip")]
            )
            #expect(voip.status == 410)
            #expect(voip.reason == "Unregistered")
        }
    }

    @Test func expiredTokensAnswer410ExpiredToken() async throws {
        try await SandboxHarness.with { sandbox in
            let device = try sandbox.device()
            let token = try #require(device.messagingToken)
            try sandbox.core.expire(token: token)
            let reply = try await sandbox.push(to: token)
            #expect(reply.status == 410)
            #expect(reply.reason == "ExpiredToken")
            #expect(reply.timestamp != nil)
        }
    }

    @Test func tokensAreAcceptedInUpperCase() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            #expect(try await sandbox.push(to: token.uppercased()).status == 200)
        }
    }

    @Test func tooManyPushesToOneTokenAnswer429() async throws {
        try await SandboxHarness.with(SandboxHarness.Setup { $0.perTokenRateLimit = 2 }) { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            // In-process, microseconds apart: well inside one second however busy the machine.
            var connection = SandboxConnectionState()
            let statuses = (0..<3).map { _ in sandbox.handle(to: token, connection: &connection)?.status }
            #expect(statuses == [200, 200, 429])
            #expect(sandbox.core.inspection().last?.reason == "TooManyRequests")
        }
    }

    @Test func duplicateHeadersAreRefused() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            var headers = RawHTTP2Client.requestHeaders(path: "/3/device/\(token)", token: sandbox.token.text)
            headers.append(("apns-topic", SandboxHarness.bundleID))
            try await raw.send(streamID: 1, headers: headers, body: #"{"aps":{}}"#)
            var iterator = raw.frames.makeAsyncIterator()
            var status: String?
            var body = ""
            while let frame = await iterator.next() {
                if frame.streamID == 1, let value = frame.payload.status { status = value }
                if frame.streamID == 1, case .data(let data) = frame.payload, case .byteBuffer(let buffer) = data.data {
                    body += String(buffer: buffer)
                    if data.endStream { break }
                }
            }
            #expect(status == "400")
            #expect(body == #"{"reason":"DuplicateHeaders"}"#)
            await raw.close()
        }
    }

    @Test func duringShutdownPushesAnswer503Shutdown() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            var connection = SandboxConnectionState()
            var request = SandboxAPNsRequest()
            request.method = "POST"
            request.path = "/3/device/\(token)"
            request.authorization = "bearer \(sandbox.token.text)"
            request.topic = SandboxHarness.bundleID
            request.body = Array(#"{"aps":{}}"#.utf8)
            guard case .respond(let accepted, _) = sandbox.core.handle(request, connection: &connection) else {
                Issue.record("expected an answer")
                return
            }
            #expect(accepted.status == 200)
            await sandbox.sandbox.apnsServer.shutdown()
            guard case .respond(let refused, _) = sandbox.core.handle(request, connection: &connection) else {
                Issue.record("expected an answer")
                return
            }
            #expect(refused.status == 503)
            #expect(refused.reason == .shutdown)
        }
    }
}
