import Foundation
public import HeraldCrypto
import HeraldMacros
import Synchronization

/// The system call UI: calls reported by the app ring, and the user answers or declines. On iOS
/// it is CallKit, told by the PushKit handler; on Android, the incoming-call screen the app's
/// messaging service raises (a full-screen notification).
public final class CallKitEmulator: Sendable {
    /// Where a call is.
    public enum CallState: String, Sendable, Hashable, Codable {
        case ringing
        case answered
        case declined
        /// Ended by the app (`CXProvider.reportCall(with:endedAt:reason:)`): see `endReason`.
        case ended
    }

    /// Why the app ended a ringing call (CallKit's `CXCallEndedReason`).
    public enum EndReason: String, Sendable, Hashable, Codable {
        case answeredElsewhere = "answered elsewhere"
        case declinedElsewhere = "declined elsewhere"
        case remoteEnded = "remote ended"
        case unanswered
    }

    /// A reported call.
    public struct Call: Sendable, Hashable, Codable {
        public var callID: String
        public var callerName: String
        public var video: Bool
        public var state: CallState
        /// Why it ended, once `ended`.
        public var endReason: EndReason?
    }

    private let state = Mutex<(calls: [String: Call], order: [String], reports: Int)>(([:], [], 0))
    private let timeline: Timeline?
    private let reporter: String
    private let screen: String

    /// - Parameters:
    ///   - reporter: who reports calls, as the timeline names it (`pushkit`, `fcm-service`).
    ///   - screen: the call UI, as the timeline names it (`callkit`, `call-screen`).
    public init(timeline: Timeline? = nil, reporter: String = "pushkit", screen: String = "callkit") {
        self.timeline = timeline
        self.reporter = reporter
        self.screen = screen
    }

    /// `CXProvider.reportNewIncomingCall` (Android: the incoming-call screen): the phone rings.
    ///
    /// A call id already reported (a VoIP push the relay sent again) counts as a report, which
    /// PushKit requires for every VoIP push, but does not ring again: CallKit refuses a known call
    /// UUID (`callUUIDAlreadyExists`), so an answered call stays answered.
    public func reportIncomingCall(callID: String, callerName: String, video: Bool) {
        let known = state.withLock { state -> Bool in
            state.reports += 1
            guard state.calls[callID] == nil else { return true }
            state.order.append(callID)
            state.calls[callID] = Call(
                callID: callID,
                callerName: callerName,
                video: video,
                state: .ringing,
                endReason: nil
            )
            return false
        }
        guard !known else {
            timeline?.record(
                reporter,
                screen,
                "incoming call reported again",
                detail: "call \(callID) is known: no ring",
                subject: callID,
                stage: .opened
            )
            return
        }
        timeline?.record(
            reporter,
            screen,
            "incoming call reported",
            detail: "\(callerName) is calling",
            subject: callID,
            stage: .opened
        )
        timeline?.record(
            screen,
            "user",
            "phone rings",
            detail: video ? "video call \(callID)" : "audio call \(callID)",
            subject: callID,
            stage: .shown,
            userSees: callerName + (video ? " (video)" : "")
        )
    }

    /// The user answers; false when no such call rings.
    @discardableResult
    public func answer(callID: String) -> Bool { settle(callID, .answered, "user answers") }

    /// The user declines; false when no such call rings.
    @discardableResult
    public func decline(callID: String) -> Bool { settle(callID, .declined, "user declines") }

    private func settle(_ callID: String, _ next: CallState, _ step: String) -> Bool {
        let settled = state.withLock { state -> Bool in
            guard state.calls[callID]?.state == .ringing else { return false }
            state.calls[callID]?.state = next
            return true
        }
        if settled { timeline?.record("user", screen, step, detail: "call \(callID)", subject: callID, stage: .acted) }
        return settled
    }

    /// The app ends a call still ringing (another device answered, the caller hung up, nobody
    /// answered in time): the ring stops with the reason. False when no such call rings.
    @discardableResult
    public func end(callID: String, reason: EndReason) -> Bool {
        let ended = state.withLock { state -> Bool in
            guard state.calls[callID]?.state == .ringing else { return false }
            state.calls[callID]?.state = .ended
            state.calls[callID]?.endReason = reason
            return true
        }
        if ended {
            timeline?.record(
                reporter,
                screen,
                "call ended: \(reason.rawValue)",
                detail: "call \(callID)",
                subject: callID
            )
            // No stage: the ring's stages (delivered, opened, shown) are over, and a stop may come
            // before or after the user acts on another device.
            timeline?.record(screen, "user", "ringing stops", detail: reason.rawValue, subject: callID)
        }
        return ended
    }

    /// A reported call by id.
    public func call(_ callID: String) -> Call? { state.withLock { $0.calls[callID] } }

    /// Every reported call, in order.
    public var calls: [Call] { state.withLock { state in state.order.compactMap { state.calls[$0] } } }

    /// How many times an incoming call was reported.
    public var reportCount: Int { state.withLock { $0.reports } }
}

/// A VoIP push as PushKit hands it to the app.
@MemberwiseInit
public struct VoIPPush: Sendable, Hashable {
    public var apnsID: String
    public var payload: String
}

/// PushKit as iOS 13+ runs it: each VoIP push goes to the app's handler, which must report an
/// incoming call to CallKit before it returns. A push that is not reported is a violation; after
/// `violationLimit` of them the system stops delivering VoIP pushes to the app.
public final class PushKitEmulator: Sendable {
    /// What became of one VoIP push.
    public enum Delivery: Sendable, Hashable {
        /// Handed to the app, which reported a call.
        case reported
        /// Handed to the app, which did not report a call: the n-th violation.
        case violation(count: Int)
        /// Not handed to the app: it has had too many violations.
        case suppressed
    }

    /// The app's `pushRegistry(_:didReceiveIncomingPushWith:)`.
    public typealias Handler = @Sendable (VoIPPush, CallKitEmulator) async -> Void

    public let callKit: CallKitEmulator
    public let violationLimit: Int
    private let violations = Mutex(0)
    private let timeline: Timeline?

    public init(callKit: CallKitEmulator, violationLimit: Int = 3, timeline: Timeline? = nil) {
        self.callKit = callKit
        self.violationLimit = violationLimit
        self.timeline = timeline
    }

    public var violationCount: Int { violations.withLock { $0 } }

    public func deliver(_ push: VoIPPush, to handler: Handler) async -> Delivery {
        if violationCount >= violationLimit {
            timeline?.record(
                "apns",
                "pushkit",
                "VoIP push not delivered: the app did not report calls \(violationLimit) times"
            )
            return .suppressed
        }
        let before = callKit.reportCount
        await handler(push, callKit)
        if callKit.reportCount > before { return .reported }
        let count = violations.withLock { count -> Int in
            count += 1
            return count
        }
        timeline?.record(
            "pushkit",
            "app",
            "violation: the VoIP push was not reported to CallKit",
            detail: "\(count) of \(violationLimit)"
        )
        return .violation(count: count)
    }

    /// The handler a correct app has: open the sealed call with the app-group keys and report it
    /// (an unknown caller when it does not open: a VoIP push must be reported whatever happens).
    public static func reportingHandler(store: AppGroupStore, timeline: Timeline? = nil) -> Handler {
        { push, callKit in
            let call = openCall(push.payload, store: store)
            if call == nil { timeline?.record("pushkit", "app", "the call content did not open; reported as unknown") }
            callKit.reportIncomingCall(
                callID: call?.callID ?? push.apnsID,
                callerName: call?.callerName ?? "Unknown caller",
                video: call?.media == .video
            )
        }
    }

    /// The call content of a Herald VoIP payload, opened with the app-group keys.
    public static func openCall(_ payload: String, store: AppGroupStore) -> CallContent? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
            let herald = object["herald"] as? [String: Any],
            let sealed = herald["sealed"] as? String,
            let callID = herald["call_id"] as? String,
            case .call(let call) = try? store.open(sealed: sealed, kind: .call, subjectID: callID)
        else { return nil }
        return call
    }
}
