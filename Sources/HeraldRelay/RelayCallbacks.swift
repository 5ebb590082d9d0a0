import Foundation
import HeraldBatching
import HeraldCrypto
import HeraldPush
public import HeraldRelayAPI
public import HeraldStore

/// The relay's callbacks part (seed 002): schedules a callback, pushes its dialog when due (and
/// again after a snooze), takes a device's answer, expires what nobody answered, and shows a
/// callback's state and history. Each change is one compare-and-set in the store, written with
/// its pushes and webhook events (`CallbackMachine` decides what a change is).
public final class RelayCallbacks: Sendable {
    let context: RelayContext
    /// Wakes the scheduler: a callback was scheduled or snoozed.
    var signal: WakeSignal { context.callbacksDue }

    /// How far in the past `at` may be (clocks differ a little between a backend and the relay).
    public static let allowedSkew: Int64 = 5_000
    /// A callback's life when the request names no expiration: an hour after its time.
    public static let defaultLifetime: Int64 = 3_600_000
    /// The longest dialog text, in UTF-8 bytes (titles and labels take the relay's field limit).
    public static let maximumTextBytes = 2048

    init(context: RelayContext) {
        self.context = context
    }

    // MARK: Scheduling

    /// Validates and stores a callback; due now (or at its time), the scheduler pushes it.
    public func schedule(_ request: CallbackRequest) async throws(RelayError) -> CallbackView {
        try context.configuration.check(request.userID, "user_id", pattern: .identifier)
        try context.configuration.check(request.serviceID, "service_id", pattern: .identifier)
        if let key = request.idempotencyKey {
            try context.configuration.check(key, "idempotency_key", pattern: .identifier)
        }
        let time = context.clock.now()
        let at = try request.at.map { value throws(RelayError) in try Self.time(value, "at") } ?? time
        guard at >= time - Self.allowedSkew else {
            throw .invalidField("at", "is in the past (\(Self.format(at)); the relay's time is \(Self.format(time)))")
        }
        let expires =
            try request.expires.map { value throws(RelayError) in try Self.time(value, "expires") }
            ?? max(at, time) + Self.defaultLifetime
        guard expires > max(at, time) else { throw .invalidField("expires", "must be after 'at' and after now") }
        let dialog = try checkDialog(request.dialog)

        let app = try await resolveApp(request)
        let id = TimeOrderedID.make(milliseconds: time)
        let sealed = Sealed(serviceID: request.serviceID, dialog: dialog)
        // The longest push number: a callback accepted always fits, whichever push it is.
        let probe = CallbackContent(
            callbackID: id,
            sequence: .max,
            serviceID: request.serviceID,
            dialog: dialog,
            pushedAt: time
        )
        do {
            try CallbackPayload.check(probe, app: app)
        } catch {
            throw .invalidField(
                "dialog",
                "does not fit in a push (\(probe.encodedLength) bytes sealed with the service id): shorten its texts"
            )
        }
        let record = CallbackRecord(
            id: id,
            appID: app.id,
            userID: request.userID,
            state: .scheduled,
            sealedDialog: seal(sealed, id: id),
            dueAt: at,
            expiresAt: expires,
            createdAt: time,
            updatedAt: time
        )
        let line = CallbackHistoryEntry(at: time, event: .scheduled, state: .scheduled, nextPushAt: at)
        let key = request.idempotencyKey.map { "callback:" + $0 }
        var stored = record
        if try await context.commit(CallbackPlanner.schedule(record, history: line, idempotencyKey: key)) == [
            .duplicate
        ] {
            // The first callback under the key committed before this one saw it.
            guard let key, let earlier = try await context.storing({ try await $0.callback(idempotencyKey: key) })
            else {
                throw RelayError.unavailable.with(detail: "a repeated idempotency key has no callback")
            }
            stored = earlier
        }
        var view = try await self.view(stored)
        if stored.id != id { view.duplicate = true }
        return view
    }

    /// The dialog asked for (or seed 002's), checked: one to four actions with unique ids, a
    /// delay for each snooze and only for a snooze.
    private func checkDialog(_ request: CallbackRequest.Dialog?) throws(RelayError) -> CallbackDialog {
        guard let request else { return .standard }
        try context.configuration.checkText(request.title, "dialog.title")
        // The text may be longer than a name (seed 002's confirmation texts are sentences); the
        // whole dialog must still fit in a push, checked once the service id is known.
        guard !request.text.isEmpty, request.text.utf8.count <= Self.maximumTextBytes else {
            throw .invalidField("dialog.text", "must hold 1 to \(Self.maximumTextBytes) bytes")
        }
        guard !request.text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" })
        else { throw .invalidField("dialog.text", "must not contain control characters but line feeds") }
        guard (1...4).contains(request.actions.count) else {
            throw .invalidField("dialog.actions", "must hold 1 to 4 actions")
        }
        var ids = Set<String>()
        var actions: [CallbackAction] = []
        for (index, action) in request.actions.enumerated() {
            let field = "dialog.actions[\(index)]"
            try context.configuration.check(action.id, field + ".id", pattern: .identifier)
            guard
                action.id.utf8.allSatisfy({
                    $0.isASCIILetterOrDigit || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                })
            else {
                throw .invalidField(field + ".id", "may hold letters, digits, '-' and '_' only (it is a URL path part)")
            }
            guard ids.insert(action.id).inserted else { throw .invalidField(field + ".id", "repeats an earlier id") }
            try context.configuration.checkText(action.label, field + ".label")
            guard let kind = CallbackActionKind(rawValue: action.kind) else {
                throw .invalidField(field + ".kind", "must be 'connect', 'snooze' or 'cancel'")
            }
            var delay = 0
            switch (kind, action.delaySeconds) {
            case (.snooze, let seconds?):
                guard (1...86_400).contains(seconds) else {
                    throw .invalidField(field + ".delay_seconds", "must be 1 to 86400 seconds")
                }
                delay = seconds
            case (.snooze, nil):
                throw .invalidField(field + ".delay_seconds", "is required for a snooze")
            case (_, nil):
                break
            case (_, .some):
                throw .invalidField(field + ".delay_seconds", "is for a snooze only")
            }
            actions.append(CallbackAction(id: action.id, label: action.label, kind: kind, delaySeconds: delay))
        }
        return CallbackDialog(title: request.title, text: request.text, actions: actions)
    }

    /// The app named, or the app of the user's devices.
    private func resolveApp(_ request: CallbackRequest) async throws(RelayError) -> AppRecord {
        if let name = request.app {
            try context.configuration.check(name, "app", pattern: .bundleID)
            guard let app = try await context.app(id: name) else {
                throw .invalidField("app", "is not a registered app")
            }
            return app
        }
        let devices = try await context.storing { try await $0.recipients(userID: request.userID) }
        guard let first = devices.first, let app = try await context.app(id: first.device.appID) else {
            throw .invalidField("app", "is required: user \(request.userID) has no device to take it from")
        }
        return app
    }

    // MARK: Reading

    /// A callback's state and history, for the backend.
    public func callback(id: String) async throws(RelayError) -> CallbackView {
        try await view(find(id))
    }

    /// A callback's state and history, for a device of its user.
    public func callback(id: String, for device: DeviceRecord) async throws(RelayError) -> CallbackView {
        let record = try await find(id)
        try checkOwner(record, device)
        return try await view(record)
    }

    private func find(_ id: String) async throws(RelayError) -> CallbackRecord {
        guard let record = try await context.storing({ try await $0.callback(id: id) }) else {
            throw RelayError.notFound.with(detail: "no callback \(id)")
        }
        return record
    }

    private func checkOwner(_ record: CallbackRecord, _ device: DeviceRecord) throws(RelayError) {
        guard device.userID == record.userID, device.appID == record.appID else {
            throw RelayError.forbidden.with(detail: "callback \(record.id) is not for this device's user")
        }
    }

    private func view(_ record: CallbackRecord) async throws(RelayError) -> CallbackView {
        let history = try await context.storing { try await $0.callbackHistory(id: record.id) }
        return CallbackView(
            callbackID: record.id,
            userID: record.userID,
            app: record.appID,
            state: record.state,
            nextPushAtMs: record.state == .scheduled ? record.dueAt : nil,
            expiresAt: record.expiresAt,
            pushes: record.pushes,
            lastAction: record.lastAction,
            history: history.map {
                CallbackView.Event(
                    event: $0.event.rawValue,
                    atMs: $0.at,
                    state: $0.state,
                    action: $0.action,
                    push: $0.sequence,
                    nextPushAtMs: $0.nextPushAt
                )
            }
        )
    }

    // MARK: Answers

    /// A device's answer: the action must be one the dialog offered, the callback waiting for an
    /// answer. Of two answers at once, one wins; the other is refused as answered already.
    public func answer(
        id: String,
        action actionID: String,
        device: DeviceRecord
    ) async throws(RelayError)
        -> CallbackAnswerView
    {
        for _ in 0..<3 {
            let record = try await find(id)
            try checkOwner(record, device)
            let dialog = try open(record).dialog
            guard let action = dialog.actions.first(where: { $0.id == actionID }) else {
                throw .invalidField(
                    "action",
                    "is not one the dialog offered (\(dialog.actions.map(\.id).joined(separator: ", ")))"
                )
            }
            let time = context.clock.now()
            let app = try await context.app(id: record.appID) ?? AppRecord(id: record.appID, teamID: "")
            let planned = try CallbackPlanner.answer(record, with: action, from: device, app: app, at: time)
            if try await context.commit(planned.change) == [.applied] { return planned.answer }
            // Another answer or the scheduler changed it first: read it again and decide anew.
        }
        throw RelayError.conflict.with(detail: "callback \(id) changed while answering; try again")
    }

    // MARK: At rest

    /// The service id and the dialog, as sealed at rest.
    struct Sealed: Codable {
        var serviceID: String
        var dialog: CallbackDialog

        enum CodingKeys: String, CodingKey {
            case serviceID = "service_id"
            case dialog
        }
    }

    static func sealingContext(_ id: String) -> String { "herald-callback-dialog:" + id }

    private func seal(_ sealed: Sealed, id: String) -> [UInt8] {
        // Strings and numbers only: encoding cannot fail.
        let json = (try? JSONEncoder().encode(sealed)) ?? Data()
        return context.masterKey.seal(SecureBytes(copying: Array(json)), context: Self.sealingContext(id))
    }

    func open(_ record: CallbackRecord) throws(RelayError) -> Sealed {
        guard
            let bytes = try? context.masterKey.open(record.sealedDialog, context: Self.sealingContext(record.id))
                .copyBytes(),
            let sealed = try? JSONDecoder().decode(Sealed.self, from: Data(bytes))
        else {
            context.logger.error("cannot open a stored callback's dialog", metadata: ["callback": "\(record.id)"])
            throw RelayError.unavailable.with(detail: "the relay cannot read this callback")
        }
        return sealed
    }

    // MARK: Times

    /// Milliseconds since the epoch from a request's time, either form.
    static func time(_ value: RequestTime, _ field: String) throws(RelayError) -> Int64 {
        if let milliseconds = value.epochMilliseconds { return milliseconds }
        switch value {
        case .milliseconds:
            throw .invalidField(field, "must be milliseconds since the epoch, 0 to \(RequestTime.latest)")
        case .text:
            throw .invalidField(
                field,
                "must be an RFC 3339 time (2026-11-25T10:00:00Z) or milliseconds since the epoch"
            )
        }
    }

    /// RFC 3339 in UTC with milliseconds, for refusals' words.
    static func format(_ milliseconds: Int64) -> String { RequestTime.format(milliseconds) }
}

/// A callback webhook event's `data`: ids, states and times, never the dialog or the service id.
/// (`callback.pushed` is written by the store when the push is delivered, with the same keys.)
struct CallbackEventData: Encodable {
    var callbackID: String
    var userID: String
    var state: String
    var action: String?
    var kind: String?
    var deviceID: String?
    var nextPushAt: String?
    /// The same instant as `nextPushAt` (deprecated in the API), in milliseconds.
    var nextPushAtMs: Int64?

    enum CodingKeys: String, CodingKey {
        case callbackID = "callback_id"
        case userID = "user_id"
        case state, action, kind
        case deviceID = "device_id"
        case nextPushAt = "next_push_at"
        case nextPushAtMs = "next_push_at_ms"
    }
}
