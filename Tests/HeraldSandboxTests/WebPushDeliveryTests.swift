import AsyncHTTPClient
import Foundation
import HeraldPush
import HeraldSandbox
import HeraldWebPushCore
import NIOCore
import Testing

/// Accepted pushes reaching emulated browsers: at once over the device connection, or kept for
/// their TTL while offline; faults, outages and the control routes of the Web Push service.
@Suite(.timeLimit(.minutes(2))) struct WebPushDeliveryTests {
    @Test func aConnectedBrowserGetsTheWebPushFrameAndDecryptsIt() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            let (frames, connection) = sandbox.deviceFrames(deviceID: browser.device.deviceID)
            defer { connection.cancel() }
            var iterator = frames.makeAsyncIterator()
            let first = try #require(await iterator.next())
            let token = try JSONDecoder().decode(SandboxDeviceEvent.self, from: Data(first.utf8))
            #expect(token == .token(kind: .messaging, token: browser.endpoint))

            let reply = try await sandbox.webPush(
                to: browser,
                plaintext: "héllo ✓",
                headers: [("TTL", "30"), ("Urgency", "very-low"), ("Topic", "t1")]
            )
            #expect(reply.status == 201)
            let text = try #require(await iterator.next())
            let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(object["type"] as? String == "web_push")
            let message = try #require(object["message"] as? [String: Any])
            #expect(message["endpoint"] as? String == browser.endpoint)
            #expect(message["ttl"] as? Int == 30)
            #expect(message["urgency"] as? String == "very-low")
            #expect(message["topic"] as? String == "t1")
            #expect((message["sent_at"] as? Int).map { $0 > 1_600_000_000_000 } == true)
            let location = try #require(reply.headers.first(name: "location"))
            #expect(location.hasSuffix("/m/" + (message["id"] as? String ?? "?")))
            #expect(try browser.open(base64: try #require(message["body"] as? String)) == "héllo ✓")
            #expect(sandbox.core.webPushInspection(endpoint: browser.endpoint).last?.delivery == "delivered")

            // Without a topic the frame has none.
            #expect(try await sandbox.webPush(to: browser).status == 201)
            let second = try #require(await iterator.next())
            #expect(second.contains(#""type":"web_push""#) && !second.contains("topic"))
        }
    }

    @Test func anOfflineBrowserGetsWhatWasKeptWhenItConnects() async throws {
        let clock = SandboxClock()
        try await SandboxHarness.with(.init { $0.clock = clock }) { sandbox in
            let browser = try sandbox.browser()
            let pushes: [(String, [(String, String?)])] = [
                ("one", [("TTL", "600")]),
                ("dropped: TTL 0", [("TTL", "0")]),
                ("replaced", [("TTL", "600"), ("Topic", "chat")]),
                ("short-lived", [("TTL", "5")]),
                ("replacement", [("TTL", "600"), ("Topic", "chat")]),
                ("two", [("TTL", "600")]),
            ]
            for (plaintext, headers) in pushes {
                #expect(try await sandbox.webPush(to: browser, plaintext: plaintext, headers: headers).status == 201)
            }
            let deliveries = sandbox.core.webPushInspection(endpoint: browser.endpoint).map { $0.delivery ?? "" }
            #expect(
                deliveries == [
                    "stored", "discarded: browser offline and TTL is 0", "stored", "stored", "stored", "stored",
                ]
            )
            // The short-lived one's TTL passes while the browser is offline.
            clock.advance(by: .seconds(6))
            var events = try sandbox.core.connect(deviceID: browser.device.deviceID).makeAsyncIterator()
            var received: [String] = []
            for _ in 0..<3 {
                let message = try #require(await events.nextWebPush())
                received.append(try browser.open(base64: message.body))
            }
            #expect(received == ["one", "replacement", "two"])
            // Kept messages are handed over once.
            #expect(try await sandbox.webPush(to: browser, plaintext: "live").status == 201)
            let live = try #require(await events.nextWebPush())
            #expect(try browser.open(base64: live.body) == "live")
        }
    }

    @Test func aTokenDelayHoldsTheEndpointBack() async throws {
        try await SandboxHarness.with { sandbox in
            let (status, json) = try await sandbox.control(
                .POST,
                "/sandbox/devices",
                body: #"{"bundle_id":"web-app","platform":"web","messaging_token_delay_ms":600000,"#
                    + #""application_server_key":"\#(WebPushFixtures.appKey.applicationServerKey)"}"#
            )
            #expect(status == 201)
            #expect(json["platform"] as? String == "web")
            #expect(json["messaging_token"] == nil)
            #expect((json["messaging_token_ready_in_ms"] as? Int).map { $0 > 500_000 } == true)
            #expect(json["voip_token"] == nil)
        }
    }

    @Test(arguments: [
        (#"{"bundle_id":"web-app","platform":"web"}"#, "application_server_key is required"),
        (#"{"bundle_id":"web-app","platform":"web","application_server_key":"AAAA"}"#, "65 bytes"),
        (#"{"bundle_id":"","platform":"web","application_server_key":"AAAA"}"#, "bundle_id"),
    ])
    func aBrowserNeedsItsApplicationServerKey(body: String, words: String) async throws {
        try await SandboxHarness.with { sandbox in
            let (status, json) = try await sandbox.control(.POST, "/sandbox/devices", body: body)
            #expect(status == 400)
            #expect((json["error"] as? String)?.contains(words) == true, "\(json)")
        }
    }

    @Test func faultsHitTheNextAuthorizedPushesThenGo() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            let other = try sandbox.browser()
            var (status, json) = try await sandbox.control(
                .POST,
                "/sandbox/webpush/faults",
                body: #"{"status":429,"retry_after":30,"count":2}"#
            )
            #expect(status == 201)
            #expect(json["count"] as? Int == 2 && json["retry_after"] as? Int == 30)
            // A refused token consumes no fault.
            #expect(try await sandbox.webPush(to: browser, headers: [("Authorization", nil)]).status == 401)
            for _ in 0..<2 {
                let reply = try await sandbox.webPush(to: browser)
                #expect(reply.status == 429)
                #expect(reply.headers.first(name: "retry-after") == "30")
            }
            #expect(sandbox.core.webPushInspection().last?.outcome == "injected")
            #expect(try await sandbox.webPush(to: browser).status == 201)

            // For one endpoint only.
            (status, _) = try await sandbox.control(
                .POST,
                "/sandbox/webpush/faults",
                body: #"{"status":503,"retry_after":5,"endpoint":"\#(other.endpoint)"}"#
            )
            #expect(status == 201)
            #expect(try await sandbox.webPush(to: browser).status == 201)
            let unavailable = try await sandbox.webPush(to: other)
            #expect(unavailable.status == 503)
            #expect(unavailable.headers.first(name: "retry-after") == "5")
            (status, _) = try await sandbox.control(.POST, "/sandbox/webpush/faults", body: #"{"status":500}"#)
            #expect(try await sandbox.webPush(to: other).status == 500)
            #expect(try await sandbox.webPush(to: other).status == 201)

            // Cleared with the others.
            _ = try await sandbox.control(.POST, "/sandbox/webpush/faults", body: #"{"status":500}"#)
            #expect(try await sandbox.control(.DELETE, "/sandbox/faults").0 == 204)
            #expect(try await sandbox.webPush(to: other).status == 201)

            for bad in [#"{"status":200}"#, #"{"status":500,"count":0}"#, #"{"status":429,"retry_after":-1}"#, "{}"] {
                #expect(try await sandbox.control(.POST, "/sandbox/webpush/faults", body: bad).0 == 400)
            }
        }
    }

    @Test func anOutageMakesTheServiceUnreachableUntilItEnds() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            #expect(try await sandbox.webPush(to: browser).status == 201)
            let (status, _) = try await sandbox.control(.POST, "/sandbox/faults/outage", body: #"{"ms":60000}"#)
            #expect(status == 201)
            let client = sandbox.makeClient()
            // The client tries to connect until its deadline: a second is enough to see it fail.
            await #expect(throws: (any Error).self) {
                _ = try await sandbox.webPush(to: browser, client: client, timeout: .seconds(1))
            }
            // The connection already open was closed too.
            await #expect(throws: (any Error).self) {
                _ = try await sandbox.webPush(to: browser, timeout: .seconds(1))
            }
            #expect(sandbox.core.webPushInspection().count == 1)
            #expect(try await sandbox.control(.DELETE, "/sandbox/faults").0 == 204)
            #expect(try await sandbox.webPush(to: browser, client: sandbox.makeClient()).status == 201)
        }
    }

    @Test func theInspectionLogIsReadAndClearedOverTheControlAPI() async throws {
        try await SandboxHarness.with { sandbox in
            let browser = try sandbox.browser()
            let other = try sandbox.browser()
            #expect(try await sandbox.webPush(to: browser).status == 201)
            #expect(try await sandbox.webPush(to: other, headers: [("TTL", nil)]).status == 400)
            var (status, json) = try await sandbox.control(.GET, "/sandbox/webpush/inspection")
            #expect(status == 200)
            #expect((json["records"] as? [[String: Any]])?.count == 2)
            let id = String(other.endpoint.split(separator: "/").last!)
            (status, json) = try await sandbox.control(.GET, "/sandbox/webpush/inspection?endpoint=\(id)")
            let records = try #require(json["records"] as? [[String: Any]])
            #expect(records.count == 1)
            #expect(records.first?["status"] as? Int == 400)
            #expect(records.first?["endpoint_id"] as? String == id)
            #expect(records.first?["error"] as? String == "Missing TTL header.")
            #expect(try await sandbox.control(.GET, "/sandbox/webpush/inspection?limit=x").0 == 400)
            #expect(try await sandbox.control(.DELETE, "/sandbox/webpush/inspection").0 == 204)
            (_, json) = try await sandbox.control(.GET, "/sandbox/webpush/inspection")
            #expect((json["records"] as? [[String: Any]])?.isEmpty == true)
        }
    }
}
