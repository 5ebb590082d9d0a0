import Foundation
import HeraldCrypto
public import HeraldDomain
import HeraldRelayAPI

/// What the user sees in the notification center.
public struct DisplayedNotification: Codable, Sendable, Hashable {
    public var title: String
    public var body: String
    /// The thread (conversation) it is grouped under.
    public var thread: String?
    public var messageID: String?
    public var conversationID: String?
    /// A tap must fetch the message from the relay (content policy `none`, `sender_only`, or a
    /// text cut to fit the push).
    public var fetchOnTap: Bool
    /// Milliseconds since the epoch.
    public var shownAt: Int64
    /// The custom data sealed with the message, kept for the app (a tap's deep link).
    public var data: [String: String]? = nil
    /// The relay's id of the push it came with (`herald.push_id`, FCM's `push_id`): the app's
    /// `tapped` receipt names it (docs/receipts.md). Nil for one that named none.
    public var pushID: String? = nil

    public init(
        title: String,
        body: String,
        thread: String?,
        messageID: String?,
        conversationID: String?,
        fetchOnTap: Bool,
        shownAt: Int64
    ) {
        self.title = title
        self.body = body
        self.thread = thread
        self.messageID = messageID
        self.conversationID = conversationID
        self.fetchOnTap = fetchOnTap
        self.shownAt = shownAt
    }

    enum CodingKeys: String, CodingKey {
        case title, body, thread, data
        case messageID = "message_id"
        case conversationID = "conversation_id"
        case pushID = "push_id"
        case fetchOnTap = "fetch_on_tap"
        case shownAt = "shown_at"
    }
}

extension DisplayedNotification {
    /// Replaces the generic text with the opened message: the sender as title, the text as body
    /// (a cut or empty text is fetched on tap).
    mutating func show(_ message: MessageContent) {
        // A sealed per-message title replaces the sender's name (docs/relay.md, "Push options").
        title = message.title ?? message.senderName
        data = message.data
        if message.text.isEmpty {
            fetchOnTap = true
        } else {
            body = message.truncated ? message.text + "…" : message.text
            fetchOnTap = message.truncated
        }
    }
}

/// What became of one alert push on the phone.
public struct ServiceExtensionResult: Sendable, Hashable {
    /// What is shown; nil for a push iOS shows nothing for (silent, badge-only).
    public var notification: DisplayedNotification?
    /// The extension ran (alert with `mutable-content: 1`).
    public var ranExtension: Bool
    /// The sealed content opened and replaced the generic text.
    public var opened: Bool
    /// Why the generic text stayed, when it did for a reason other than the content policy
    /// (a push whose clear fields disagree with its sealed content says `tampered`), or why
    /// nothing is shown (a repeat).
    public var diagnostic: String?
    /// The push was shown before (the relay sends at least once): nothing is shown again.
    public var duplicate: Bool = false
    /// Why the content could not be shown, as the phone's `failed` receipt says it
    /// (docs/receipts.md); nil when it opened, or when there was nothing to open.
    public var failure: ReceiptFailure?
}

/// The Notification Service Extension, as iOS runs it: only for alert pushes with
/// `mutable-content: 1`, with a time budget (30 s on iOS) after which the original content is
/// shown. It opens `herald.sealed` with the key the app-group store holds for the envelope's key
/// id and replaces the generic title and body with the sender and the text.
///
/// Routing comes from what the envelope authenticates, never from the clear fields beside it:
/// the notification is threaded under the sealed `conversation_id`, and a push whose clear
/// `herald.conversation_id`, `aps.thread-id` or `herald.kind` disagrees with the sealed content
/// (or is missing) keeps the generic text and is reported as tampered (docs/envelope.md §5).
/// A push already shown (same kind and message id) is dropped.
public struct NotificationServiceEmulator: Sendable {
    public let store: AppGroupStore
    public let budget: Duration
    /// Extra time the extension takes before opening: lets tests and demos exceed the budget.
    public let delay: Duration
    /// How many shown pushes the app-group store remembers to drop a repeat; 0 remembers none
    /// (the `herald extension` harness, which opens captures again on purpose).
    public let rememberedPushes: Int
    /// The phone's clock: when a notification is shown.
    let clock: any HeraldClock

    public init(
        store: AppGroupStore,
        budget: Duration = .seconds(30),
        delay: Duration = .zero,
        rememberedPushes: Int = AppGroupStore.defaultRememberedPushes,
        clock: any HeraldClock = WallClock()
    ) {
        self.store = store
        self.budget = budget
        self.delay = delay
        self.rememberedPushes = rememberedPushes
        self.clock = clock
    }

    /// Handles one delivered push: the APNs JSON body and its push type.
    public func receive(payload: String, pushType: String) async -> ServiceExtensionResult {
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] else {
            return ServiceExtensionResult(
                notification: nil,
                ranExtension: false,
                opened: false,
                diagnostic: "the payload is not a JSON object"
            )
        }
        let aps = object["aps"] as? [String: Any] ?? [:]
        let herald = object["herald"] as? [String: Any]
        let generic = Self.generic(aps: aps, herald: herald, pushID: herald?["push_id"] as? String, at: clock.now())
        guard pushType == "alert", let original = generic else {
            return ServiceExtensionResult(notification: generic, ranExtension: false, opened: false, diagnostic: nil)
        }
        guard (aps["mutable-content"] as? Int) == 1 else {
            return ServiceExtensionResult(notification: original, ranExtension: false, opened: false, diagnostic: nil)
        }
        // The extension's work races its budget; when the budget ends first, iOS shows the
        // original content (serviceExtensionTimeWillExpire). Opening takes no time of its own:
        // the race is the extension's delay against the budget, and the loser is cancelled.
        let inTime = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                if delay > .zero { try? await Task.sleep(for: delay) }
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: budget)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        if inTime { return open(herald: herald ?? [:], threadID: aps["thread-id"] as? String, original: original) }
        return ServiceExtensionResult(
            notification: original,
            ranExtension: true,
            opened: false,
            diagnostic: "the extension's time budget (\(budget)) expired; the original content is shown",
            failure: .budgetExceeded
        )
    }

    private func open(
        herald: [String: Any],
        threadID: String?,
        original: DisplayedNotification
    ) -> ServiceExtensionResult {
        if herald["kind"] as? String == "missed_call" { return openMissedCall(herald: herald, original: original) }
        var shown = original
        let policy = herald["policy"] as? String ?? "full"
        guard let sealed = herald["sealed"] as? String else {
            // Content policy "none": only ids travel, nothing authenticates them; a tap fetches
            // the message (with the device's credential) by the clear id.
            shown.fetchOnTap = true
            if let messageID = herald["message_id"] as? String, let repeated = repeated(.message, messageID) {
                return repeated
            }
            return ServiceExtensionResult(
                notification: shown,
                ranExtension: true,
                opened: false,
                diagnostic: policy == "none" ? nil : "the push carries no sealed content"
            )
        }
        guard let messageID = herald["message_id"] as? String else {
            return failed(original, "the push carries no message id", .malformed)
        }
        let content: PushContent
        do {
            content = try store.open(sealed: sealed, kind: .message, subjectID: messageID)
        } catch {
            return failed(original, error.detail, error.unopened ?? .malformed)
        }
        guard case .message(let message) = content else {
            return failed(original, "the sealed content is not a message", .malformed)
        }
        if let repeated = repeated(.message, message.messageID) { return repeated }
        // The envelope authenticated: from here on the sealed content decides the routing.
        shown.thread = message.conversationID
        shown.conversationID = message.conversationID
        shown.messageID = message.messageID
        let clear = RoutingCheck.mismatch([
            ("herald.kind", herald["kind"] as? String, "message"),
            ("herald.conversation_id", herald["conversation_id"] as? String, message.conversationID),
            ("aps.thread-id", threadID, message.conversationID),
        ])
        if let tampered = clear {
            // The generic text, under the sealed conversation; a tap fetches the message by its
            // authenticated id.
            shown.fetchOnTap = true
            return ServiceExtensionResult(
                notification: shown,
                ranExtension: true,
                opened: false,
                diagnostic: tampered,
                failure: .tampered
            )
        }
        shown.show(message)
        return ServiceExtensionResult(notification: shown, ranExtension: true, opened: true, diagnostic: nil)
    }

    /// The result for a push already shown, or nil (and the push remembered) for a new one.
    func repeated(_ kind: PushKind, _ subjectID: String) -> ServiceExtensionResult? {
        let pushID = AppGroupStore.shownPushID(kind: kind, subjectID: subjectID)
        // A store that cannot record shows the push: a repeat is better than a loss.
        guard (try? store.recordShown(pushID, capacity: rememberedPushes)) == false else { return nil }
        return ServiceExtensionResult(
            notification: nil,
            ranExtension: true,
            opened: false,
            diagnostic: "push \(pushID) was already shown; the repeat is dropped",
            duplicate: true
        )
    }

    /// The generic text, under no conversation: the clear one is not authenticated.
    func failed(_ original: DisplayedNotification, _ why: String, _ failure: ReceiptFailure) -> ServiceExtensionResult {
        var shown = original
        shown.thread = nil
        shown.conversationID = nil
        return ServiceExtensionResult(
            notification: shown,
            ranExtension: true,
            opened: false,
            diagnostic: why,
            failure: failure
        )
    }

    /// The notification as APNs delivered it (the generic text), keeping the push's id; nil when
    /// there is no alert. `herald` gives the clear message and conversation ids, when trusted.
    static func generic(
        aps: [String: Any],
        herald: [String: Any]?,
        pushID: String?,
        at time: Int64
    ) -> DisplayedNotification? {
        let title: String
        let body: String
        switch aps["alert"] {
        case let alert as [String: Any]:
            title = alert["title"] as? String ?? ""
            body = alert["body"] as? String ?? ""
        case let text as String:
            title = ""
            body = text
        default:
            return nil
        }
        var shown = DisplayedNotification(
            title: title,
            body: body,
            thread: aps["thread-id"] as? String,
            messageID: herald?["message_id"] as? String,
            conversationID: herald?["conversation_id"] as? String,
            fetchOnTap: false,
            shownAt: time
        )
        shown.pushID = pushID
        return shown
    }
}
