import Foundation
import HeraldPush
import HeraldRelayAPI
import HeraldStore
import HeraldTestSupport
import Testing

@testable import HeraldRelay

/// The API's views of stored records, as the relay builds them: each row a record and the JSON
/// its answer carries (keys sorted, as every Herald HTTP service writes them).
@Suite("Wire views")
struct WireViewsTests {
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func call(_ state: CallState, deviceID: String?) -> CallRecord {
        CallRecord(
            id: "call-1",
            appID: StoreFixtures.appID,
            userID: "u",
            media: "video",
            sealedCaller: [9],
            state: state,
            deviceID: deviceID,
            reason: state == .missed ? "unanswered" : nil,
            createdAt: 100,
            expiresAt: 200,
            ringingAt: 110,
            endedAt: state == .ringing ? nil : 150,
            updatedAt: 150,
            devices: [
                CallDeviceRecord(deviceID: "d1", report: .answered, reportedAt: 140),
                CallDeviceRecord(deviceID: "d2", report: .pushed),
            ]
        )
    }

    static let devicesJSON =
        #""devices":[{"device_id":"d1","report":"answered","reported_at":140},{"device_id":"d2","report":"pushed"}],"#

    /// The device that answered or declined shows only under the state it caused.
    @Test(arguments: [
        (
            call(.answered, deviceID: "d1"),
            #"{"answered_by":"d1","app":"com.example.chat","call_id":"call-1","created_at":100,"# + devicesJSON
                + #""ended_at":150,"expires_at":200,"media":"video","ringing_at":110,"state":"answered","user_id":"u"}"#
        ),
        (
            call(.declined, deviceID: "d2"),
            #"{"app":"com.example.chat","call_id":"call-1","created_at":100,"declined_by":"d2","# + devicesJSON
                + #""ended_at":150,"expires_at":200,"media":"video","ringing_at":110,"state":"declined","user_id":"u"}"#
        ),
        (
            call(.missed, deviceID: nil),
            #"{"app":"com.example.chat","call_id":"call-1","created_at":100,"# + devicesJSON
                + #""ended_at":150,"expires_at":200,"media":"video","reason":"unanswered","ringing_at":110,"#
                + #""state":"missed","user_id":"u"}"#
        ),
        (
            call(.ringing, deviceID: nil),
            #"{"app":"com.example.chat","call_id":"call-1","created_at":100,"# + devicesJSON
                + #""expires_at":200,"media":"video","ringing_at":110,"state":"ringing","user_id":"u"}"#
        ),
    ])
    func callView(record: CallRecord, expected: String) throws {
        #expect(try Self.json(CallView(record)) == expected)
    }

    static var device: DeviceRecord {
        var device = StoreFixtures.device("d1", createdAt: 10)
        device.updatedAt = 20
        device.voipToken = nil
        device.tokenDeadReason = "Unregistered"
        device.apnsEnvironment = .development
        device.notificationPermission = .denied
        return device
    }

    /// A device's view: tokens and their state, never key material.
    @Test func deviceView() throws {
        #expect(
            try Self.json(DeviceView(Self.device))
                == #"{"apns_environment":"development","app":"com.example.chat","device_id":"d1","key_id":"0011223344556677","#
                + #""messaging_token":"aad1","notifications":"denied","platform":"ios","#
                + #""token_dead_reason":"Unregistered","user_id":"u"}"#
        )
    }

    static let presence = PresenceRecord(
        deviceID: "d1",
        userID: "u",
        conversation: "c1",
        state: .active,
        updatedAt: 30,
        expiresAt: 90
    )

    /// An operator's view of a device: whether it has tokens, not the tokens; its last heartbeat.
    @Test(arguments: [
        (
            Recipient(device: device, presence: presence),
            #","presence":{"conversation":"c1","expires_at":90,"state":"active","updated_at":30},"#
        ),
        (Recipient(device: device, presence: nil), ","),
    ])
    func userDeviceView(recipient: Recipient, presence: String) throws {
        #expect(
            try Self.json(UserDeviceView(recipient))
                == #"{"activated_at":10,"apns_environment":"development","app":"com.example.chat","device_id":"d1","#
                + #""has_messaging_token":true,"has_voip_token":false,"key_id":"0011223344556677","#
                + #""notifications":"denied","platform":"ios"\#(presence)"token_dead_reason":"Unregistered","#
                + #""updated_at":20}"#
        )
    }

    /// A listed push in a given state after some attempts, and the times its view shows.
    struct ItemRow: Sendable, CustomTestStringConvertible {
        var state: PushState
        var attempts: Int
        var lastAttempt: Bool
        var finished: Bool
        var testDescription: String { "\(state) after \(attempts)" }
    }

    /// A listed push: when its last attempt was depends on its state and whether it had one;
    /// when it finished, on whether its state is final.
    @Test(arguments: [
        ItemRow(state: .queued, attempts: 0, lastAttempt: false, finished: false),
        ItemRow(state: .sending, attempts: 0, lastAttempt: false, finished: false),
        ItemRow(state: .sending, attempts: 1, lastAttempt: true, finished: false),
        ItemRow(state: .delivered, attempts: 1, lastAttempt: true, finished: true),
        ItemRow(state: .failed, attempts: 2, lastAttempt: true, finished: true),
        ItemRow(state: .tokenDead, attempts: 1, lastAttempt: true, finished: true),
        ItemRow(state: .tokenDead, attempts: 0, lastAttempt: false, finished: true),
        ItemRow(state: .expired, attempts: 1, lastAttempt: false, finished: true),
        ItemRow(state: .skipped, attempts: 0, lastAttempt: false, finished: true),
    ])
    func pushItemView(row: ItemRow) throws {
        let summary = PushSummary(
            pushID: "p1",
            deviceID: "d1",
            appID: nil,
            network: .fcm,
            kind: .message,
            subjectID: "m1",
            state: row.state,
            attempts: row.attempts,
            lastReason: "why",
            apnsID: nil,
            createdAt: 10,
            updatedAt: 20,
            expiresAt: 30
        )
        #expect(
            try Self.json(PushItemView(summary))
                == #"{"attempts":\#(row.attempts),"created_at":10,"device_id":"d1","expires_at":30,"#
                + (row.finished ? #""finished_at":20,"# : "") + #""kind":"message","#
                + (row.lastAttempt ? #""last_attempt_at":20,"# : "")
                + #""network":"fcm","push_id":"p1","reason":"why","state":"\#(row.state.rawValue)","updated_at":20}"#
        )
    }

    /// A push's last state and reason, and the words its status gives for them.
    struct StatusRow: Sendable, CustomTestStringConvertible {
        var state: PushState
        var reason: String?
        var explanation: String
        var testDescription: String { "\(state) \(reason ?? "")" }
    }

    /// A push's status: its history, and words for the states whose meaning is not plain (a dead
    /// token, a token APNs does not know in that environment).
    @Test(arguments: [
        StatusRow(state: .delivered, reason: nil, explanation: ""),
        StatusRow(
            state: .tokenDead,
            reason: "Unregistered",
            explanation:
                #""explanation":"the push network no longer accepts this device's token (see reason), so the relay "#
                + #"removed it; the device gets no pushes until its app activates again with a new token "#
                + #"(POST /v1/activations)","#
        ),
        StatusRow(
            state: .failed,
            reason: "BadDeviceToken",
            explanation:
                #""explanation":"APNs does not know this token in the environment it was sent to (see reason): "#
                + #"most often a development build's token sent to production or the reverse; the relay kept "#
                + #"the token. If the device's apns_environment is wrong, its app activates again naming the "#
                + #"right one","#
        ),
        StatusRow(state: .failed, reason: "TooManyRequests", explanation: ""),
    ])
    func pushStatusView(row: StatusRow) throws {
        let (state, reason) = (row.state, row.reason)
        var entry = StoreFixtures.push("p1", device: "d1", kind: .call, at: 10, expires: 30)
        entry.state = state
        entry.lastReason = reason
        entry.attempts = 1
        entry.updatedAt = 20
        entry.waitingSince = 5
        entry.nowOrNever = true
        let history = [
            DeliveryEvent(pushID: "p1", at: 10, state: .queued, reason: nil),
            DeliveryEvent(pushID: "p1", at: 20, state: state, reason: reason),
        ]
        // The phone's receipts, furthest last: `device_stage` is the furthest.
        let receipts = [
            PushReceipt(pushID: "p1", stage: .delivered, deviceTime: 21, receivedAt: 22, failure: nil),
            PushReceipt(pushID: "p1", stage: .shown, deviceTime: 23, receivedAt: 24, failure: nil),
        ]
        let reasonJSON = reason.map { #""reason":"\#($0)","# } ?? ""
        let historyReason = reason.map { #","reason":"\#($0)""# } ?? ""
        #expect(
            try Self.json(PushStatusView(entry, history: history, receipts: receipts))
                == #"{"apns_id":"p1","attempts":1,"created_at":10,"device_id":"d1","device_stage":"shown","#
                + #""expires_at":30,"# + row.explanation
                + #""history":[{"at":10,"state":"queued"},{"at":20\#(historyReason),"state":"\#(state.rawValue)"}],"#
                + #""kind":"call","now_or_never":true,"priority":10,"push_id":"p1","# + reasonJSON
                + #""receipts":[{"device_time":21,"push_id":"p1","received_at":22,"stage":"delivered"},"#
                + #"{"device_time":23,"push_id":"p1","received_at":24,"stage":"shown"}],"#
                + #""state":"\#(state.rawValue)","updated_at":20,"waiting_since":5}"#
        )
    }
}
