import AsyncHTTPClient
import Foundation
import HeraldFCMCore
import HeraldSandbox
import NIOCore
import NIOHTTP2
import Testing

/// Every refusal of `messages:send`, with FCM's status, body and error code.
@Suite(.timeLimit(.minutes(2))) struct FCMSendErrorTests {
    @Test func missingUnknownAndExpiredAccessTokensAreUnauthenticated() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let body = SandboxHarness.fcmMessage(to: token)
            let bearer = try await sandbox.accessToken()
            #expect(try await sandbox.fcmSend(body, bearer: bearer).status == 200)

            sandbox.core.expireAccessTokens()
            for candidate in [nil, "ya29.never-issued", bearer] {
                let reply = try await sandbox.fcmSend(body, bearer: candidate)
                #expect(reply.status == 401)
                let error = try #require(reply.error)
                #expect(error.error.status == "UNAUTHENTICATED")
                #expect(error.error.message.hasPrefix("Request had invalid authentication credentials."))
                // No FCM error code: an OAuth failure, not an FCM one.
                #expect(error.fcmErrorCode == nil)
                #expect(reply.headers.first(name: "www-authenticate")?.hasPrefix("Bearer") == true)
            }
            // A new token works again.
            #expect(try await sandbox.fcmSend(body, bearer: try await sandbox.accessToken()).status == 200)
            let outcomes = sandbox.core.fcmInspection().filter { $0.kind == .send }.map(\.errorCode)
            #expect(outcomes == [nil, "UNAUTHENTICATED", "UNAUTHENTICATED", "UNAUTHENTICATED", nil])
        }
    }

    @Test func anotherProjectOrAScopeWithoutMessagingIsPermissionDenied() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            try sandbox.core.register(serviceAccount: FCMFixtures.sandboxAccount(FCMFixtures.other))
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let body = SandboxHarness.fcmMessage(to: token)

            // A valid token of the other project, used on this project's path.
            let otherBearer = try await sandbox.accessToken(for: FCMFixtures.other)
            let wrongProject = try await sandbox.fcmSend(body, bearer: otherBearer)
            #expect(wrongProject.status == 403)
            #expect(wrongProject.error?.error.status == "PERMISSION_DENIED")
            #expect(wrongProject.error?.fcmErrorCode == nil)

            let noScope = try await sandbox.accessToken(scope: "https://www.googleapis.com/auth/userinfo.email")
            let insufficient = try await sandbox.fcmSend(body, bearer: noScope)
            #expect(insufficient.status == 403)
            #expect(insufficient.error?.error.status == "PERMISSION_DENIED")
            #expect(insufficient.error?.error.message == "Request had insufficient authentication scopes.")
            #expect(insufficient.error?.fcmErrorCode == nil)
        }
    }

    @Test(arguments: [
        ("not json", nil as String?),
        (#"["message"]"#, nil),
        (#"{"validate_only":true}"#, "message"),
        (#"{"message":"text"}"#, "message"),
        (#"{"mesage":{"token":"x"}}"#, "mesage"),
        (#"{"message":{"token":"TOKEN","data":{"count":3}}}"#, "message.data[count]"),
        (#"{"message":{"token":"TOKEN","data":["a"]}}"#, "message.data"),
        (#"{"message":{"token":"TOKEN","data":{"from":"x"}}}"#, "message.data"),
        (#"{"message":{"token":"TOKEN","android":{"ttl":"10m"}}}"#, "message.android.ttl"),
        (#"{"message":{"token":"TOKEN","android":{"ttl":"2419201s"}}}"#, "message.android.ttl"),
        (#"{"message":{"token":"TOKEN","android":{"priority":"URGENT"}}}"#, "message.android.priority"),
        (#"{"message":{"token":"TOKEN","topic":"news"}}"#, "message"),
        (#"{"message":{"topic":"news"}}"#, "message.topic"),
        (#"{"message":{"condition":"'a' in topics"}}"#, "message.condition"),
        (#"{"message":{"token":"bad token!"}}"#, "message.token"),
        (#"{"message":{"token":"TOKEN","notifcation":{}}}"#, "message"),
    ])
    func invalidRequestsAreInvalidArguments(body: String, field: String?) async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let reply = try await sandbox.fcmSend(
                body.replacingOccurrences(of: "TOKEN", with: token),
                bearer: try await sandbox.accessToken()
            )
            #expect(reply.status == 400, "\(reply.body)")
            #expect(reply.error?.error.status == "INVALID_ARGUMENT")
            #expect(reply.error?.fcmErrorCode == .invalidArgument)
            #expect(reply.field == field)
            let record = try #require(sandbox.core.fcmInspection().last)
            #expect(record.status == 400)
            #expect(record.outcome == "rejected")
            #expect(record.errorCode == "INVALID_ARGUMENT")
        }
    }

    @Test func theDataPayloadLimitIs4096Bytes() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let bearer = try await sandbox.accessToken()
            let fits = ["k": String(repeating: "a", count: 4095)]
            #expect(
                try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token, data: fits), bearer: bearer).status
                    == 200
            )
            let tooBig = ["k": String(repeating: "a", count: 4096)]
            let reply = try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token, data: tooBig), bearer: bearer)
            #expect(reply.status == 400)
            #expect(reply.error?.fcmErrorCode == .invalidArgument)
            #expect(reply.field == "message.data")
        }
    }

    @Test func aTokenTheSandboxNeverIssuedIsInvalid() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            // Well formed, but never issued.
            let device = try sandbox.androidDevice()
            let issued = try #require(device.messagingToken)
            let forged = String(issued.dropLast()) + (issued.hasSuffix("A") ? "B" : "A")
            let reply = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: forged),
                bearer: try await sandbox.accessToken()
            )
            #expect(reply.status == 400)
            #expect(reply.error?.fcmErrorCode == .invalidArgument)
            #expect(reply.error?.error.message == "The registration token is not a valid FCM registration token")
            #expect(reply.field == "message.token")
            // An APNs token is not a registration token either.
            let apns = try #require(try sandbox.device().messagingToken)
            let apnsReply = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: apns),
                bearer: try await sandbox.accessToken()
            )
            #expect(apnsReply.status == 400)
            #expect(apnsReply.field == "message.token")
        }
    }

    @Test func uninstalledAndExpiredTokensAreUnregistered() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let bearer = try await sandbox.accessToken()
            let uninstalled = try sandbox.androidDevice()
            let expired = try sandbox.androidDevice()
            let storedFor = try #require(uninstalled.messagingToken)
            #expect(try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: storedFor), bearer: bearer).status == 200)
            try sandbox.core.uninstall(deviceID: uninstalled.deviceID)
            // Over the control API, as a test script would.
            var request = HTTPClientRequest(
                url: sandbox.endpoints.controlURL + "/sandbox/tokens/\(try #require(expired.messagingToken))/expire"
            )
            request.method = .POST
            #expect(try await sandbox.client.execute(request, timeout: .seconds(10)).status.code == 204)

            for token in [uninstalled.messagingToken, expired.messagingToken].compactMap({ $0 }) {
                let reply = try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token), bearer: bearer)
                #expect(reply.status == 404)
                #expect(reply.error?.error.status == "NOT_FOUND")
                #expect(reply.error?.fcmErrorCode == .unregistered)
            }
            #expect(throws: SandboxError.self) { try sandbox.core.connect(deviceID: uninstalled.deviceID) }
            // The expired token's device may still connect (its app is installed).
            _ = try sandbox.core.connect(deviceID: expired.deviceID)
        }
    }

    @Test func aTokenOfAnotherProjectIsASenderIDMismatch() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice(project: FCMFixtures.otherProject).messagingToken)
            let reply = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(to: token),
                bearer: try await sandbox.accessToken()
            )
            #expect(reply.status == 403)
            #expect(reply.error?.error.status == "PERMISSION_DENIED")
            #expect(reply.error?.fcmErrorCode == .senderIDMismatch)
        }
    }

    @Test func aShuttingDownSandboxIsUnavailable() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let bearer = try await sandbox.accessToken()
            // Stopping the APNs listener puts the core in shutdown; the FCM listener still answers.
            await sandbox.sandbox.apnsServer.shutdown()
            let reply = try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token), bearer: bearer)
            #expect(reply.status == 503)
            #expect(reply.error?.error.status == "UNAVAILABLE")
            #expect(reply.error?.fcmErrorCode == .unavailable)
        }
    }
}
