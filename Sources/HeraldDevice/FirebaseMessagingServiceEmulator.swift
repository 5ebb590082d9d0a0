import HeraldCrypto
public import HeraldDomain
import HeraldMacros

/// A data message as FCM hands it to the app.
@MemberwiseInit
public struct DeliveredFCMMessage: Sendable, Hashable {
    /// FCM's message name.
    public var name: String
    public var data: [String: String]
    /// `HIGH` or `NORMAL`.
    public var priority: String
    public var collapseKey: String?
}

/// The Android app's `FirebaseMessagingService.onMessageReceived`: Herald sends data messages
/// only (Google never sees a notification block it could read), so the app opens the sealed
/// content with its app-group key and builds the notification itself, or, for a call, raises
/// the incoming-call screen.
///
/// Routing comes from what the envelope authenticates: a message is threaded under its sealed
/// `conversation_id`, and one whose clear `conversation_id` disagrees with it (or is missing)
/// keeps the generic text and is reported as tampered (docs/envelope.md §5). A message or call
/// already shown is dropped.
public struct FirebaseMessagingServiceEmulator: Sendable {
    /// What the app made of one data message.
    public enum Outcome: Sendable, Hashable {
        /// A notification to show; `opened` when the sealed content replaced the generic text;
        /// `failure` why it did not, as the phone's `failed` receipt says it (docs/receipts.md).
        case notification(DisplayedNotification, opened: Bool, diagnostic: String?, failure: ReceiptFailure? = nil)
        /// An incoming call to ring; an unknown caller when the content did not open (the
        /// diagnostic says why).
        case call(callID: String, callerName: String, video: Bool, diagnostic: String?)
        /// Nothing to show, and why.
        case ignored(String)
        /// Shown before (the relay sends at least once): dropped. The push's name
        /// (`AppGroupStore.shownPushID`).
        case duplicate(String)
    }

    public let store: AppGroupStore
    /// The app's own text for a message it cannot open or must fetch (Android apps ship it).
    public var genericTitle = "New message"
    public var genericBody = "You have a new message"
    /// How many shown pushes the app-group store remembers to drop a repeat; 0 remembers none
    /// (the `herald extension` harness, which opens captures again on purpose).
    public var rememberedPushes: Int
    /// The phone's clock: when a notification is shown.
    let clock: any HeraldClock

    public init(
        store: AppGroupStore,
        rememberedPushes: Int = AppGroupStore.defaultRememberedPushes,
        clock: any HeraldClock = WallClock()
    ) {
        self.store = store
        self.rememberedPushes = rememberedPushes
        self.clock = clock
    }

    /// Handles one data message.
    public func onMessageReceived(_ data: [String: String]) -> Outcome {
        switch data["kind"] {
        case "message": message(data)
        case "call": call(data)
        case "missed_call": missedCall(data)
        default: .ignored("the data message is not Herald's (kind \(data["kind"] ?? "missing"))")
        }
    }

    /// The app's generic notification for a data message, keeping the push's id (`push_id`) for
    /// the content intent, whose tap sends the `tapped` receipt (docs/receipts.md).
    func generic(
        _ data: [String: String],
        title: String? = nil,
        body: String? = nil,
        messageID: String? = nil
    ) -> DisplayedNotification {
        var shown = DisplayedNotification(
            title: title ?? genericTitle,
            body: body ?? genericBody,
            thread: nil,
            messageID: messageID,
            conversationID: nil,
            fetchOnTap: false,
            shownAt: clock.now()
        )
        shown.pushID = data["push_id"]
        return shown
    }

    private func message(_ data: [String: String]) -> Outcome {
        var shown = generic(data, messageID: data["message_id"])
        guard let sealed = data["sealed"] else {
            // Content policy "none": only ids travel, nothing authenticates them, so the clear
            // conversation is all there is; a tap fetches the message by the clear id.
            shown.thread = data["conversation_id"]
            shown.conversationID = data["conversation_id"]
            shown.fetchOnTap = true
            if let messageID = data["message_id"], let repeated = repeated(.message, messageID) { return repeated }
            let diagnostic = data["policy"] == "none" ? nil : "the message carries no sealed content"
            return .notification(shown, opened: false, diagnostic: diagnostic)
        }
        guard let messageID = data["message_id"] else {
            return .notification(
                shown,
                opened: false,
                diagnostic: "the message carries no message id",
                failure: .malformed
            )
        }
        let message: MessageContent
        do {
            guard case .message(let opened) = try store.open(sealed: sealed, kind: .message, subjectID: messageID)
            else {
                return .notification(
                    shown,
                    opened: false,
                    diagnostic: "the sealed content is not a message",
                    failure: .malformed
                )
            }
            message = opened
        } catch {
            return .notification(shown, opened: false, diagnostic: error.detail, failure: error.unopened ?? .malformed)
        }
        if let repeated = repeated(.message, message.messageID) { return repeated }
        // The envelope authenticated (its additional data binds `kind` and `message_id`): the
        // sealed content decides the conversation.
        shown.thread = message.conversationID
        shown.conversationID = message.conversationID
        if let tampered = RoutingCheck.mismatch([
            ("conversation_id", data["conversation_id"], message.conversationID)
        ]) {
            shown.fetchOnTap = true
            return .notification(shown, opened: false, diagnostic: tampered, failure: .tampered)
        }
        shown.show(message)
        return .notification(shown, opened: true, diagnostic: nil)
    }

    /// `.duplicate` for a push already shown, or nil (and the push remembered) for a new one.
    func repeated(_ kind: PushKind, _ subjectID: String) -> Outcome? {
        let pushID = AppGroupStore.shownPushID(kind: kind, subjectID: subjectID)
        // A store that cannot record shows the push: a repeat is better than a loss.
        guard (try? store.recordShown(pushID, capacity: rememberedPushes)) == false else { return nil }
        return .duplicate(pushID)
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
            if let repeated = repeated(.call, call.callID) { return repeated }
            return .call(callID: call.callID, callerName: call.callerName, video: call.media == .video, diagnostic: nil)
        } catch {
            return unknown(error.detail)
        }
    }
}
