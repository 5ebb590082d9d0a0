import AsyncHTTPClient
import Foundation
import HeraldDevice
import HeraldRelayAPI
import HeraldSimulation
import Logging
import NIOCore

/// `herald simulate telephony`: three calls to a user with two devices, each ending another way.
extension Simulation {
    static let caller = #"{"id":"agent-dana","name":"Dana (Acme support)"}"#

    static func telephony(phone: EmulatedPhone, backend: SimulatedBackend, clock: TestClock) async throws {
        let pad = try await secondDevice(like: phone, backend: backend)
        defer { pad.shutdown() }
        let devices = [phone, pad]

        // 1. Both ring; the user answers on the phone; the pad stops: answered elsewhere.
        try await ring("call-7781", devices, backend: backend)
        try await phone.answerCall("call-7781")
        try await pad.wait("the pad to stop ringing") { $0.callKit.call("call-7781")?.state == .ended }

        // 2. Both ring; the caller hangs up: remote ended.
        try await ring("call-7782", devices, backend: backend)
        try await backend.cancel("call-7782")
        for device in devices {
            try await device.wait("the call to stop") { $0.callKit.call("call-7782")?.state == .ended }
        }

        // 3. Both ring; nobody answers within the call's time to live: unanswered, and each gets
        //    the missed-call alert.
        try await ring("call-7783", devices, backend: backend, ttl: 5)
        clock.advance(by: .seconds(5))
        for device in devices {
            try await device.wait("the missed-call alert") { device in
                device.callKit.call("call-7783")?.state == .ended
                    && device.notifications.contains { $0.thread == "call:call-7783" }
            }
        }
    }

    /// The user's second device (an iPad, or a second Android phone), on the same timeline with
    /// its components named apart (`callkit · pad`).
    static func secondDevice(
        like phone: EmulatedPhone,
        backend: SimulatedBackend,
        named device: String = "pad"
    ) async throws -> EmulatedPhone {
        var configuration = phone.configuration
        configuration.storeDirectory = NSTemporaryDirectory() + "herald-\(device)-\(UUID().uuidString)"
        var logger = Logger(label: "herald.simulate.\(device)")
        logger.logLevel = .critical
        let pad = try EmulatedPhone(
            configuration: configuration,
            http: backend.http,
            timeline: Timeline(sharing: phone.timeline, device: device),
            logger: logger
        )
        try await pad.launch()
        let android = configuration.platform == .android
        try await pad.wait("the pad's session with every push token") { pad in
            guard let session = pad.session else { return false }
            return session.isStarted && session.tokens.messaging != nil
                && (android || session.tokens.voip != nil)
        }
        return pad
    }

    /// The backend calls; every device rings and reports it ringing.
    static func ring(
        _ callID: String,
        _ devices: [EmulatedPhone],
        backend: SimulatedBackend,
        ttl: Int? = nil
    ) async throws {
        let receipt = try await backend.postRecorded(
            "/v1/calls",
            #"{"to":"customer-42","from":\#(caller),"call_id":"\#(callID)","media":"audio"\#(ttl.map { #","ttl":\#($0)"# } ?? "")}"#
        ) { receipt in
            "\(receipt.pushes.count) push(es)" + (ttl.map { ", rings \($0) s" } ?? "")
                + receipt.skipped.map { ", skipped \($0.deviceID): \($0.reason)" }.joined()
        }
        for device in devices {
            try await device.wait("the device to ring") { $0.callKit.call(callID)?.state == .ringing }
            try await device.wait("the relay to hear it ring") { $0.relayState(ofCall: callID) == .ringing }
        }
        let android = devices.first?.configuration.platform == .android
        for push in receipt.pushes {
            try await backend.recordAccepted(
                push.pushID,
                subject: receipt.id,
                pushType: android ? "fcm" : "voip",
                topic: android
                    ? devices.first?.configuration.bundleID : (devices.first?.configuration.bundleID ?? "") + ".voip",
                network: android ? "fcm" : "apns"
            )
        }
    }
}

extension SimulatedBackend {
    /// The caller hangs up: `POST /v1/calls/{id}/cancel`.
    func cancel(_ callID: String) async throws {
        let sent = timeline.time
        var request = HTTPClientRequest(url: relayURL + "/v1/calls/\(callID)/cancel")
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer " + apiKey)
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        // No stage: the ring's stages are over; the hang-up follows them.
        timeline.record(
            "backend",
            "relay",
            "caller hangs up",
            detail: "POST /v1/calls/\(callID)/cancel → \(response.status.code)"
                + (String(buffer: bytes).contains("\"cancelled\"") ? "" : ": " + String(buffer: bytes)),
            subject: callID,
            at: sent
        )
    }
}
