import HeraldMacros
public import HeraldStore

/// A call's life at the relay, as a state machine: events in, actions out, no I/O.
///
/// A call rings on every device of its user that got its VoIP push, until one device answers or
/// declines (a decline on one device ends the call for all), the caller hangs up (`cancel`), or
/// nobody answered within the call's time to live (`timeout`: missed). Once ended it stays ended:
/// a later event changes nothing and is told what became of the call.
///
/// The relay builds the machine from the stored call, hands it the event, and writes the
/// transition the actions name with a compare-and-set in the store: of two devices answering at
/// once, the store lets one win; the other reads the call again, and its machine (now `answered`)
/// refuses.
@MemberwiseInit
public struct CallMachine: Sendable {
    /// Where the call is.
    public enum State: Sendable, Hashable {
        case ringing
        case answered(by: String)
        case declined(by: String)
        /// The caller (the backend) hung up before anyone answered.
        case cancelled
        /// Nobody answered within the call's time to live.
        case missed

        /// The stored state's name.
        public var name: CallState {
            switch self {
            case .ringing: .ringing
            case .answered: .answered
            case .declined: .declined
            case .cancelled: .cancelled
            case .missed: .missed
            }
        }

        /// Why a device still ringing must stop, once the call is in this state; `nil` while it
        /// rings.
        public var stopReason: CallStopReason? {
            switch self {
            case .ringing: nil
            case .answered: .answeredElsewhere
            case .declined: .declinedElsewhere
            case .cancelled: .remoteEnded
            case .missed: .unanswered
            }
        }
    }

    /// What happened to the call.
    public enum Event: Sendable, Hashable {
        /// A device shows the call (CallKit or the incoming-call screen is up).
        case ringing(device: String)
        case answer(device: String)
        case decline(device: String)
        /// The caller hung up.
        case cancel
        /// The call's time to live passed.
        case timeout
    }

    /// What the relay must do, in order.
    public enum Action: Sendable, Hashable {
        /// Store the call's new state (a compare-and-set from `ringing`).
        case transition(to: State)
        /// Record the device's own report (ringing, answered, declined).
        case recordReport(device: String, CallDeviceReport)
        /// Write a webhook event for the app's backend.
        case webhook(WebhookEventType, device: String?, reason: String?)
        /// Tell these devices, over their live channels, to stop ringing (never by a push: iOS
        /// requires every VoIP push to be reported to CallKit as a call).
        case stop(devices: [String], reason: CallStopReason)
        /// Queue the missed-call alert to every device of the call.
        case queueMissedAlert
        /// The event came after the call ended: answer the caller with the call as it is.
        case refuse(ended: State)
    }

    public private(set) var state: State
    /// The devices the call rang on (got its push), in the order stored.
    public let devices: [String]
    /// Whether some device reported ringing already (`call.ringing` is written once).
    public private(set) var ringingReported: Bool

    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (.ringing, .ringing(let device)):
            var actions: [Action] = [.recordReport(device: device, .ringing)]
            if !ringingReported {
                ringingReported = true
                actions.append(.webhook(.callRinging, device: device, reason: nil))
            }
            return actions
        case (.ringing, .answer(let device)):
            return end(.answered(by: device), by: device, report: .answered, event: .callAnswered)
        case (.ringing, .decline(let device)):
            return end(.declined(by: device), by: device, report: .declined, event: .callDeclined)
        case (.ringing, .cancel):
            return end(.cancelled, by: nil, report: nil, event: .callCancelled)
        case (.ringing, .timeout):
            return end(.missed, by: nil, report: nil, event: .callMissed) + [.queueMissedAlert]
        case (_, .ringing(let device)):
            // A device that connects after the call ended stops at once, unless it is the one that
            // ended it.
            guard let reason = state.stopReason, device != state.endedBy else { return [] }
            return [.stop(devices: [device], reason: reason)]
        case (_, .answer), (_, .decline), (_, .cancel):
            return [.refuse(ended: state)]
        case (_, .timeout):
            // Answered, declined or cancelled in time: the timer has nothing to do.
            return []
        }
    }

    private mutating func end(
        _ next: State,
        by device: String?,
        report: CallDeviceReport?,
        event: WebhookEventType
    ) -> [Action] {
        state = next
        var actions: [Action] = [.transition(to: next)]
        if let device, let report { actions.append(.recordReport(device: device, report)) }
        // A device's answer or decline needs no reason; the caller's hang-up and the timeout do.
        actions.append(.webhook(event, device: device, reason: device == nil ? next.stopReason?.rawValue : nil))
        let others = devices.filter { $0 != device }
        if let reason = next.stopReason, !others.isEmpty { actions.append(.stop(devices: others, reason: reason)) }
        return actions
    }
}

extension CallMachine.State {
    /// The device that answered or declined.
    public var endedBy: String? {
        switch self {
        case .answered(let device), .declined(let device): device
        case .ringing, .cancelled, .missed: nil
        }
    }

    /// The state of a stored call.
    public init(_ record: CallRecord) {
        switch record.state {
        case .ringing: self = .ringing
        case .answered: self = .answered(by: record.deviceID ?? "")
        case .declined: self = .declined(by: record.deviceID ?? "")
        case .cancelled: self = .cancelled
        case .missed: self = .missed
        }
    }
}

extension CallMachine {
    /// The machine of a stored call.
    public init(_ record: CallRecord) {
        self.init(
            state: State(record),
            devices: record.devices.map(\.deviceID),
            ringingReported: record.ringingAt != nil
        )
    }
}
