/// What a push carries. The kind is bound into every envelope's additional data, so a sealed
/// message cannot be opened as a call.
public enum PushKind: UInt8, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// A messaging push: APNs `alert`, priority 5, opened by the Notification Service Extension.
    case message = 1
    /// A call push: APNs `voip`, priority 10, handed to PushKit and reported to CallKit.
    case call = 2
    /// A missed-call alert: APNs `alert`, priority 5, opened by the Notification Service
    /// Extension (an FCM data message on Android).
    case missedCall = 3
    /// A callback push (seed 002): an APNs `alert` with the callback category, priority 10, whose
    /// sealed content is the dialog the app shows; its additional data also binds the push's
    /// sequence number (docs/envelope.md, section 5).
    case callback = 4

    public var description: String {
        switch self {
        case .message: "message"
        case .call: "call"
        case .missedCall: "missed_call"
        case .callback: "callback"
        }
    }
}
