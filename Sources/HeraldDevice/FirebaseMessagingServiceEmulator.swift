import HeraldCrypto

/// A data message as FCM hands it to the app.
public struct DeliveredFCMMessage: Sendable, Hashable {
    /// FCM's message name.
    public var name: String
    public var data: [String: String]
    /// `HIGH` or `NORMAL`.
    public var priority: String
    public var collapseKey: String?

    public init(name: String, data: [String: String], priority: String, collapseKey: String? = nil) {
        self.name = name
        self.data = data
        self.priority = priority
        self.collapseKey = collapseKey
    }
}

/// The Android app's `FirebaseMessagingService.onMessageReceived`: Herald sends data messages
/// only (Google never sees a notification block it could read), so the app opens the sealed
/// content with its app-group key and builds the notification itself, or, for a call, raises
/// the incoming-call screen.
public struct FirebaseMessagingServiceEmulator: Sendable {
    /// What the app made of one data message.
    public enum Outcome: Sendable, Hashable {
        /// A notification to show; `opened` when the sealed content replaced the generic text.
        case notification(DisplayedNotification, opened: Bool, diagnostic: String?)
        /// An incoming call to ring; an unknown caller when the content did not open (the
        /// diagnostic says why).
        case call(callID: String, callerName: String, video: Bool, diagnostic: String?)
        /// Nothing to show, and why.
        case ignored(String)
    }

    public let store: AppGroupStore
    /// The app's own text for a message it cannot open or must fetch (Android apps ship it).
    public var genericTitle = "New message"
    public var genericBody = "You have a new message"
    let now: @Sendable () -> Int64

    public init(store: AppGroupStore, now: @escaping @Sendable () -> Int64) {
        self.store = store
        self.now = now
    }

    /// Handles one data message.
    public func onMessageReceived(_ data: [String: String]) -> Outcome {
        switch data["kind"] {
        case "message": message(data)
        case "call": call(data)
        default: .ignored("the data message is not Herald's (kind \(data["kind"] ?? "missing"))")
        }
    }

    private func message(_ data: [String: String]) -> Outcome {
        var shown = DisplayedNotification(
            title: genericTitle,
            body: genericBody,
            thread: data["conversation_id"],
            messageID: data["message_id"],
            conversationID: data["conversation_id"],
            fetchOnTap: false,
            shownAt: now()
        )
        guard let sealed = data["sealed"] else {
            // Content policy "none": only ids travel; a tap fetches the message.
            shown.fetchOnTap = true
            let diagnostic = data["policy"] == "none" ? nil : "the message carries no sealed content"
            return .notification(shown, opened: false, diagnostic: diagnostic)
        }
        guard let messageID = data["message_id"] else {
            return .notification(shown, opened: false, diagnostic: "the message carries no message id")
        }
        do {
            guard case .message(let message) = try store.open(sealed: sealed, kind: .message, subjectID: messageID)
            else { return .notification(shown, opened: false, diagnostic: "the sealed content is not a message") }
            shown.show(message)
            return .notification(shown, opened: true, diagnostic: nil)
        } catch {
            return .notification(shown, opened: false, diagnostic: error.detail)
        }
    }

    private func call(_ data: [String: String]) -> Outcome {
        guard let callID = data["call_id"] else { return .ignored("the call carries no call id") }
        // A high-priority message must lead to something the user sees (FCM deprioritizes apps
        // whose high-priority messages do not): a call that does not open rings as unknown.
        func unknown(_ why: String) -> Outcome {
            .call(callID: callID, callerName: "Unknown caller", video: false, diagnostic: why)
        }
        guard let sealed = data["sealed"] else { return unknown("the call carries no sealed content") }
        do {
            guard case .call(let call) = try store.open(sealed: sealed, kind: .call, subjectID: callID) else {
                return unknown("the sealed content is not a call")
            }
            return .call(callID: call.callID, callerName: call.callerName, video: call.media == .video, diagnostic: nil)
        } catch {
            return unknown(error.detail)
        }
    }
}
