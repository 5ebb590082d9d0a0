import Crypto
import Foundation
import HeraldFCMCore
import HeraldSandbox
import NIOHTTP1
import Testing

/// The FCM side of the control API: service accounts, Android devices, faults, inspection.
@Suite(.timeLimit(.minutes(2))) struct FCMControlTests {
    @Test func serviceAccountsAndAndroidDevicesCanBeRegisteredOverHTTP() async throws {
        try await SandboxHarness.with { sandbox in
            // No account yet: an Android device needs a project.
            let (orphanStatus, orphan) = try await sandbox.control(
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"com.example.android","platform":"android"}"#
            )
            #expect(orphanStatus == 400)
            #expect((orphan["error"] as? String)?.contains("project_id") == true)

            let account = String(
                decoding: try JSONEncoder().encode(FCMFixtures.sandboxAccount(FCMFixtures.primary)),
                as: UTF8.self
            )
            let (created, _) = try await sandbox.control(.POST, "/sandbox/fcm/service-accounts", body: account)
            #expect(created == 201)
            #expect(sandbox.core.serviceAccounts == [FCMFixtures.sandboxAccount(FCMFixtures.primary)])
            let (_, listed) = try await sandbox.control(.GET, "/sandbox/fcm/service-accounts")
            #expect((listed["service_accounts"] as? [[String: Any]])?.first?["project_id"] as? String == "herald-test")

            let (deviceStatus, device) = try await sandbox.control(
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"com.example.android","platform":"android","messaging_token_delay_ms":0}"#
            )
            #expect(deviceStatus == 201)
            #expect(device["platform"] as? String == "android")
            #expect(device["project_id"] as? String == FCMFixtures.project)
            #expect(device["bundle_id"] as? String == "com.example.android")
            #expect(device["voip_token"] == nil || device["voip_token"] is NSNull)
            let token = try #require(device["messaging_token"] as? String)
            #expect(token.contains(":APA91b"))

            // The account registered over HTTP signs tokens the endpoint accepts.
            let bearer = try await sandbox.accessToken()
            #expect(try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token), bearer: bearer).status == 200)

            // With accounts of two projects, the project must be named.
            try sandbox.core.register(serviceAccount: FCMFixtures.sandboxAccount(FCMFixtures.other))
            let (ambiguous, reason) = try await sandbox.control(
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"com.example.android","platform":"android"}"#
            )
            #expect(ambiguous == 400)
            #expect((reason["error"] as? String)?.contains("project_id") == true)
            let (named, other) = try await sandbox.control(
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"com.example.android","platform":"android","project_id":"other-project"}"#
            )
            #expect(named == 201)
            #expect(other["project_id"] as? String == FCMFixtures.otherProject)

            // iOS devices are unchanged: an app is required, and they say they are iOS.
            let (ios, iosDevice) = try await sandbox.control(
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"\#(SandboxHarness.bundleID)"}"#
            )
            #expect(ios == 201)
            #expect(iosDevice["platform"] as? String == "ios")
            #expect(iosDevice["voip_token"] is String)
        }
    }

    @Test func badServiceAccountsAreRefusedWithAReason() async throws {
        try await SandboxHarness.with { sandbox in
            let cases: [(String, String)] = [
                (
                    #"{"client_email":"a@b","private_key_id":"k","project_id":"p","public_key_pem":"nope"}"#,
                    "not an RSA public key"
                ),
                (
                    // A public key, but not an RSA one.
                    String(
                        decoding: try JSONEncoder().encode(
                            SandboxServiceAccount(
                                clientEmail: "a@b",
                                privateKeyID: "k",
                                projectID: "p",
                                publicKeyPEM: P256.Signing.PrivateKey().publicKey.pemRepresentation
                            )
                        ),
                        as: UTF8.self
                    ),
                    "not an RSA public key"
                ),
                (
                    #"{"client_email":"","private_key_id":"k","project_id":"p","public_key_pem":"x"}"#,
                    "client_email must not be empty"
                ),
                (#"{"client_email":"a@b"}"#, "the field 'private_key_id' is missing"),
            ]
            for (body, message) in cases {
                let (status, reply) = try await sandbox.control(.POST, "/sandbox/fcm/service-accounts", body: body)
                #expect(status == 400)
                #expect((reply["error"] as? String)?.contains(message) == true, "\(reply)")
            }
            #expect(sandbox.core.serviceAccounts.isEmpty)
        }
    }

    @Test func faultsAnswerWithTheirCodeStatusAndRetryAfter() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let bearer = try await sandbox.accessToken()
            let body = SandboxHarness.fcmMessage(to: token)
            let (created, fault) = try await sandbox.control(
                .POST,
                "/sandbox/fcm/faults",
                body: #"{"error_code":"QUOTA_EXCEEDED","retry_after":10,"count":2}"#
            )
            #expect(created == 201)
            #expect(fault["error_code"] as? String == "QUOTA_EXCEEDED")
            for _ in 0..<2 {
                let reply = try await sandbox.fcmSend(body, bearer: bearer)
                #expect(reply.status == 429)
                #expect(reply.headers.first(name: "retry-after") == "10")
                #expect(reply.error?.error.status == "RESOURCE_EXHAUSTED")
                #expect(reply.error?.fcmErrorCode == .quotaExceeded)
            }
            #expect(try await sandbox.fcmSend(body, bearer: bearer).status == 200)
            let outcomes = sandbox.core.fcmInspection(token: token).map(\.outcome)
            #expect(outcomes == ["injected", "injected", "accepted"])

            // A status other than the code's, for one token only, without Retry-After.
            let other = try #require(try sandbox.androidDevice().messagingToken)
            try sandbox.core.inject(fcmFault: SandboxFCMFault(errorCode: .unavailable, status: 500, token: token))
            let untouched = try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: other), bearer: bearer)
            #expect(untouched.status == 200)
            let hit = try await sandbox.fcmSend(body, bearer: bearer)
            #expect(hit.status == 500)
            #expect(hit.error?.error.code == 500)
            #expect(hit.error?.fcmErrorCode == .unavailable)
            #expect(hit.headers.first(name: "retry-after") == nil)

            // DELETE /sandbox/faults clears FCM faults too.
            try sandbox.core.inject(fcmFault: SandboxFCMFault(errorCode: .internal, count: 5))
            let (cleared, _) = try await sandbox.control(.DELETE, "/sandbox/faults")
            #expect(cleared == 204)
            #expect(try await sandbox.fcmSend(body, bearer: bearer).status == 200)

            let (badCount, _) = try await sandbox.control(
                .POST,
                "/sandbox/fcm/faults",
                body: #"{"error_code":"INTERNAL","count":0}"#
            )
            #expect(badCount == 400)
            let (badCode, _) = try await sandbox.control(.POST, "/sandbox/fcm/faults", body: #"{"error_code":"NOPE"}"#)
            #expect(badCode == 400)
        }
    }

    @Test func latencyAppliesToFCMAnswers() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let bearer = try await sandbox.accessToken()
            sandbox.core.setLatency(.milliseconds(200))
            let clock = ContinuousClock()
            let start = clock.now
            #expect(try await sandbox.fcmSend(SandboxHarness.fcmMessage(to: token), bearer: bearer).status == 200)
            #expect(clock.now - start >= .milliseconds(200))
        }
    }

    @Test func accessTokensCanBeExpiredOverHTTP() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let bearer = try await sandbox.accessToken()
            let body = SandboxHarness.fcmMessage(to: token)
            #expect(try await sandbox.fcmSend(body, bearer: bearer).status == 200)
            let (status, _) = try await sandbox.control(.POST, "/sandbox/fcm/access-tokens/expire")
            #expect(status == 204)
            #expect(try await sandbox.fcmSend(body, bearer: bearer).status == 401)
        }
    }

    @Test func theInspectionLogRecordsSendsAndTokenRequests() async throws {
        try await SandboxHarness.with(.fcm) { sandbox in
            var updates = sandbox.core.fcmInspectionUpdates().makeAsyncIterator()
            let token = try #require(try sandbox.androidDevice().messagingToken)
            let bearer = try await sandbox.accessToken()
            #expect(await updates.next()?.kind == .token)
            let reply = try await sandbox.fcmSend(
                SandboxHarness.fcmMessage(
                    to: token,
                    data: ["a": "1"],
                    android: ["priority": "HIGH", "ttl": "30s", "collapse_key": "c"]
                ),
                bearer: bearer
            )
            let record = try #require(await updates.next())
            #expect(record.kind == .send)
            #expect(record.project == FCMFixtures.project)
            #expect(record.token == token)
            #expect(record.priority == "HIGH")
            #expect(record.ttl == "30s")
            #expect(record.collapseKey == "c")
            #expect(record.data == ["a": "1"])
            #expect(record.status == 200)
            #expect(record.outcome == "accepted")
            #expect(record.delivery == "stored")
            #expect(record.name == reply.json?["name"] as? String)
            #expect(record.sequence == 2)

            let (_, filtered) = try await sandbox.control(.GET, "/sandbox/fcm/inspection?token=\(token)")
            let records = try #require(filtered["records"] as? [[String: Any]])
            #expect(records.count == 1)
            #expect(records.first?["collapse_key"] as? String == "c")
            #expect(records.first?["kind"] as? String == "send")
            #expect(filtered["access_token_grants"] as? Int == 1)
            let (_, limited) = try await sandbox.control(.GET, "/sandbox/fcm/inspection?limit=1")
            #expect((limited["records"] as? [[String: Any]])?.first?["kind"] as? String == "send")
            let (badLimit, _) = try await sandbox.control(.GET, "/sandbox/fcm/inspection?limit=x")
            #expect(badLimit == 400)

            let (cleared, _) = try await sandbox.control(.DELETE, "/sandbox/fcm/inspection")
            #expect(cleared == 204)
            #expect(sandbox.core.fcmInspection().isEmpty)
            // The APNs log is separate.
            #expect(sandbox.core.inspection().isEmpty)
        }
    }

    @Test func serviceAccountsLoadFromGoogleKeyFilesAndTheirOwnJSON() throws {
        let directory = NSTemporaryDirectory() + "herald-fcm-accounts-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let expected = FCMFixtures.sandboxAccount(FCMFixtures.primary)

        let google = directory + "/google.json"
        try JSONEncoder().encode(FCMFixtures.primary).write(to: URL(filePath: google))
        #expect(try SandboxServiceAccount.load(path: google) == expected)

        let own = directory + "/sandbox.json"
        try JSONEncoder().encode(expected).write(to: URL(filePath: own))
        #expect(try SandboxServiceAccount.load(path: own) == expected)

        let broken = directory + "/broken.json"
        try Data(#"{"client_email":"x"}"#.utf8).write(to: URL(filePath: broken))
        #expect(throws: SandboxError.self) { try SandboxServiceAccount.load(path: broken) }
        #expect(throws: SandboxError.self) { try SandboxServiceAccount.load(path: directory + "/missing.json") }
    }

    @Test func theConfigurationFileReadsServiceAccounts() throws {
        let text =
            #"{"service_accounts":[{"client_email":"a@p.iam.gserviceaccount.com","private_key_id":"k1","#
            + #""project_id":"p","public_key_pem":"PEM"}]}"#
        let file = try JSONDecoder().decode(SandboxConfigurationFile.self, from: Data(text.utf8))
        #expect(
            file.serviceAccounts == [
                SandboxServiceAccount(
                    clientEmail: "a@p.iam.gserviceaccount.com",
                    privateKeyID: "k1",
                    projectID: "p",
                    publicKeyPEM: "PEM"
                )
            ]
        )
        #expect(file.apps == nil)
    }
}
