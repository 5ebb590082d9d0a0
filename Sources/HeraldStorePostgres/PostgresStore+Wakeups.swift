import HeraldStore
import PostgresNIO

/// Wake-ups across nodes: LISTEN on one pooled connection for the other stores' NOTIFYs.
enum PostgresWakeups {
    /// The channel, per schema (notifications are database-wide).
    static func channel(schema: String) -> String { "herald_outbox_\(schema.lowercased())" }
}

extension PostgresStore {
    public func followQueuedElsewhere(_ queued: @escaping @Sendable () -> Void) async {
        await follow(
            PostgresWakeups.channel(schema: configuration.schema),
            what: "pushes queued by other nodes",
            ignoring: instance,
            queued
        )
    }

    /// LISTENs on `channel` on a pooled connection held for it, calling `heard` for every
    /// notification (but those whose payload is `ignoring`: this store's own) and once each time
    /// the LISTEN starts, for whatever was sent while nobody listened. A lost connection is
    /// replaced after a backoff of 100 ms doubling to 5 s; returns when the task is cancelled or
    /// the store closes.
    func follow(
        _ channel: String,
        what: String,
        ignoring: String? = nil,
        _ heard: @escaping @Sendable () -> Void
    ) async {
        await follow(channel, what: what, missedSome: heard) { payload in
            if payload != ignoring { heard() }
        }
    }

    /// Listens on `channel` until the task is cancelled, giving each notification's payload to
    /// `heard`; `missedSome` runs whenever notifications may have been missed (at the start, after
    /// a lost connection), or the store closes.
    func follow(
        _ channel: String,
        what: String,
        missedSome: @escaping @Sendable () -> Void,
        payloads heard: @escaping @Sendable (String) -> Void
    ) async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            // A closed store has nothing more to follow.
            guard let client = try? await runningClient("follow \(what)") else { return }
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        missedSome()
                        delay = .milliseconds(100)
                        for try await notification in notifications { heard(notification.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "cannot follow \(what); retrying",
                    metadata: ["error": "\(PostgresFailure.describe(error))"]
                )
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }
}
