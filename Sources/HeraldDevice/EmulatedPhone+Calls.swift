import Foundation
public import HeraldDomain
import HeraldRelayAPI
import Synchronization

/// The SDK session's live channel and what it learned of each call.
final class CallLink: Sendable {
    struct State {
        var channel: CallChannel?
        /// Counts the channels opened, so that the end of a replaced one is not taken for the
        /// current one's.
        var generation = 0
        /// The last state the relay gave for each call.
        var states: [String: CallState] = [:]
    }

    let state = Mutex(State())
}

// MARK: Calls after the ring (seed 004, telephony steps 4–5)

/// After the VoIP push was reported to CallKit (Android: the incoming-call screen raised), the
/// SDK session connects its live channel and reports the call ringing; the user's answer or
/// decline goes to the relay through it; a `call.stop` from the relay (another device answered
/// or declined, the caller hung up, nobody answered) ends the ringing call with its reason.
/// Never a push to stop ringing: the relay does not send one (iOS requires every VoIP push to be
/// reported as a call).
extension EmulatedPhone {
    /// The last state the relay gave for a call (over the live channel), if any.
    public func relayState(ofCall callID: String) -> CallState? {
        callLink.state.withLock { $0.states[callID] }
    }

    /// The user answers a ringing call: CallKit answers, and the relay hears it (the first answer
    /// of the user's devices wins; a later one is told the call ended). False when the call does
    /// not ring here.
    @discardableResult
    public func answerCall(_ callID: String) async throws -> Bool {
        guard callKit.answer(callID: callID) else { return false }
        try await report(.callAnswer(callID: callID), action: "answer", callID: callID)
        return true
    }

    /// The user declines a ringing call, for every device of the user.
    @discardableResult
    public func declineCall(_ callID: String) async throws -> Bool {
        guard callKit.decline(callID: callID) else { return false }
        try await report(.callDecline(callID: callID), action: "decline", callID: callID)
        return true
    }

    /// The call was reported to the system's call UI: connect and report it ringing.
    func callReported(_ callID: String) async {
        guard let channel = connectedChannel() else {
            record(diagnostic: "the call \(callID) rings, but the phone is not activated: the relay cannot be told")
            return
        }
        channel.send(.callRinging(callID: callID))
        timeline.record("sdk", "relay", "call ringing reported", detail: "call.ringing", subject: callID)
    }

    /// Closes the live channel (the app stops).
    func closeCallChannel() {
        callLink.state.withLock { state -> CallChannel? in
            defer { state.channel = nil }
            return state.channel
        }?.close()
    }

    /// The live channel, connected now if it was not.
    func connectedChannel() -> CallChannel? {
        guard let registration = store.registration(), let credential = store.credential() else { return nil }
        let (channel, opened) = callLink.state.withLock { state -> (CallChannel, Bool) in
            if let channel = state.channel { return (channel, false) }
            state.generation += 1
            let generation = state.generation
            let channel = CallChannel(
                tasks: tasks,
                relay: registration.relayURL,
                deviceID: registration.deviceID,
                credential: credential,
                logger: logger,
                received: { [weak self] frame in await self?.received(frame) },
                ended: { [weak self] in self?.channelEnded(generation) }
            )
            state.channel = channel
            return (channel, true)
        }
        if opened {
            timeline.record(
                "sdk",
                "relay",
                "live channel connected",
                detail: "/v1/devices/\(registration.deviceID)/live"
            )
        }
        return channel
    }

    /// The relay (or the network) ended the channel; one the app closed itself is not news.
    private func channelEnded(_ generation: Int) {
        let current = callLink.state.withLock { state -> Bool in
            guard state.generation == generation, state.channel != nil else { return false }
            state.channel = nil
            return true
        }
        if current { timeline.record("relay", "sdk", "live channel closed") }
    }

    /// Sends the user's answer or decline over the live channel, or over HTTP without one.
    private func report(_ frame: LiveClientFrame, action: String, callID: String) async throws {
        if let channel = callLink.state.withLock({ $0.channel }) {
            channel.send(frame)
            timeline.record("sdk", "relay", "call \(action) reported", detail: "call.\(action)", subject: callID)
            return
        }
        guard let registration = store.registration(), let credential = store.credential() else {
            throw DeviceError.store("the phone is not activated yet")
        }
        let view = try await http.reportCall(
            relay: registration.relayURL,
            id: callID,
            action: action,
            credential: credential
        )
        callLink.state.withLock { $0.states[callID] = view.state }
        timeline.record(
            "sdk",
            "relay",
            "call \(action) reported",
            detail: "POST /v1/calls/\(callID)/\(action): \(view.state.rawValue)",
            subject: callID
        )
        changed()
    }

    private func received(_ frame: LiveServerFrame) async {
        switch frame {
        case .callStop(let callID, let reason, let state):
            callLink.state.withLock { $0.states[callID] = state }
            timeline.record(
                "relay",
                "sdk",
                "call.stop",
                detail: "\(reason.rawValue) (\(state.rawValue))",
                subject: callID
            )
            callKit.end(callID: callID, reason: Self.endReason(reason))
        case .callState(let callID, let state, let device, let accepted):
            callLink.state.withLock { $0.states[callID] = state }
            timeline.record(
                "relay",
                "sdk",
                accepted ? "call \(state.rawValue)" : "call already \(state.rawValue)",
                detail: device.map { "by device \($0)" },
                subject: callID
            )
        case .message(let message):
            // The chat's live messages are the app's (`EmulatedPhone+Life`).
            await liveMessage(message)
        case .chatEvent(let conversation, let event):
            await liveChatEvent(event, in: conversation)
        }
        changed()
    }

    static func endReason(_ reason: CallStopReason) -> CallKitEmulator.EndReason {
        switch reason {
        case .answeredElsewhere: .answeredElsewhere
        case .declinedElsewhere: .declinedElsewhere
        case .remoteEnded: .remoteEnded
        case .unanswered: .unanswered
        }
    }
}
