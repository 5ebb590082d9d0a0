/// Every metric a Herald process writes: its name, kind, labels and meaning. The metrics factory
/// takes each series' `# HELP` text from here, so a metric is documented once, where it is
/// rendered; docs/relay.md lists the same table for operators.
public enum MetricCatalog {
    /// How a metric is rendered.
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// One metric.
    public struct Entry: Sendable {
        public let name: String
        public let kind: Kind
        public let labels: [String]
        public let help: String
    }

    /// The help text of a metric by name; empty (no `# HELP` line) for one not listed, which the
    /// tests that scrape every process refuse.
    public static func help(for name: String) -> String {
        byName[name]?.help ?? ""
    }

    public static let entries: [Entry] =
        pushClient("apns") + pushClient("fcm") + pushClient("webpush") + pushClient("hms") + [
            Entry(
                name: "herald_apns_bad_device_tokens_total",
                kind: .counter,
                labels: ["key", "environment"],
                help:
                    "Pushes APNs refused as BadDeviceToken, by key and environment: most often a token of the other environment; the token is kept."
            ),
            Entry(
                name: "herald_fcm_token_refreshes_total",
                kind: .counter,
                labels: [],
                help: "OAuth2 access tokens fetched for the FCM service account."
            ),
            Entry(
                name: "herald_hms_token_refreshes_total",
                kind: .counter,
                labels: [],
                help: "OAuth 2.0 access tokens fetched for the Huawei app (client credentials)."
            ),
            Entry(
                name: "herald_relay_activations_total",
                kind: .counter,
                labels: [],
                help: "Devices activated (first activations and re-activations)."
            ),
            Entry(
                name: "herald_relay_messages_accepted_total",
                kind: .counter,
                labels: [],
                help: "Messages accepted by POST /v1/messages (duplicates by idempotency key aside)."
            ),
            Entry(
                name: "herald_relay_calls_accepted_total",
                kind: .counter,
                labels: [],
                help: "Calls accepted by POST /v1/calls (duplicates by idempotency key aside)."
            ),
            Entry(
                name: "herald_relay_callbacks_scheduled_total",
                kind: .counter,
                labels: [],
                help: "Callbacks scheduled by POST /v1/callbacks (repeated idempotency keys included)."
            ),
            Entry(
                name: "herald_relay_callback_pushes_total",
                kind: .counter,
                labels: [],
                help: "Callback dialogs pushed when due (each push to all of the user's devices counts once)."
            ),
            Entry(
                name: "herald_relay_callback_answers_total",
                kind: .counter,
                labels: [],
                help: "Callback answers taken from devices (ready, snooze, cancel)."
            ),
            Entry(
                name: "herald_relay_calls_ended_total",
                kind: .counter,
                labels: ["state"],
                help:
                    "Calls that stopped ringing, by how: answered, declined, cancelled (the caller hung up), missed (nobody answered in time)."
            ),
            Entry(
                name: "herald_relay_receipts_total",
                kind: .counter,
                labels: ["stage", "app", "network"],
                help:
                    "Receipts recorded from the phones, by stage (delivered, opened, shown, failed, tapped), app and network: shown over delivered pushes is the ratio accepted to shown."
            ),
            Entry(
                name: "herald_relay_push_escalations_total",
                kind: .counter,
                labels: ["action", "app"],
                help:
                    "Pushes not shown within their app's deadline, by what the relay did: notify, other_devices, resend, ring."
            ),
            Entry(
                name: "herald_relay_calls_unreported_total",
                kind: .counter,
                labels: ["app"],
                help:
                    "VoIP pushes PushKit delivered that the app did not report to CallKit in time (iOS stops VoIP pushes to such apps)."
            ),
            Entry(
                name: "herald_relay_receipts_refused_total",
                kind: .counter,
                labels: ["reason"],
                help:
                    "Receipts not recorded: unknown_push (not sent to that device), bad_tag (not made with its keys), replayed (that stage was recorded already)."
            ),
            Entry(
                name: "herald_relay_push_shown_seconds",
                kind: .histogram,
                labels: ["app", "network"],
                help: "From a push's acceptance to the relay receiving the phone's shown receipt."
            ),
            Entry(
                name: "herald_relay_chat_events_live_total",
                kind: .counter,
                labels: [],
                help: "Chat events sent over live channels this node holds (one per device; no acknowledgement)."
            ),
            Entry(
                name: "herald_relay_duplicate_ingests_total",
                kind: .counter,
                labels: [],
                help: "Ingests answered with an earlier ingest's receipt (same idempotency key)."
            ),
            Entry(
                name: "herald_relay_undeliverable_messages_total",
                kind: .counter,
                labels: ["outcome"],
                help:
                    "Messages for users without an activated device: refused, held, released, or expired while held."
            ),
            Entry(
                name: "herald_relay_stale_ingests_total",
                kind: .counter,
                labels: [],
                help: "Messages made again from a fresh read: the recipients this node kept had changed (PostgreSQL)."
            ),
            Entry(
                name: "herald_relay_pushes_queued_total",
                kind: .counter,
                labels: [],
                help: "Pushes written to the outbox."
            ),
            Entry(
                name: "herald_relay_pushes_skipped_total",
                kind: .counter,
                labels: [],
                help:
                    "Devices not pushed at ingest (no token, app not registered, looking at the conversation, or reached live)."
            ),
            Entry(
                name: "herald_relay_push_latency_seconds",
                kind: .histogram,
                labels: [],
                help: "Seconds from a push's acceptance to its delivery (delivered pushes only)."
            ),
            Entry(
                name: "herald_relay_pushes_in_flight",
                kind: .gauge,
                labels: [],
                help: "Pushes this node's dispatcher has claimed and not yet completed."
            ),
            Entry(
                name: "herald_relay_pushes_completed_total",
                kind: .counter,
                labels: ["state"],
                help:
                    "Pushes finished by this node's dispatcher, by final state (delivered, token_dead, failed, expired)."
            ),
            Entry(
                name: "herald_relay_push_retries_total",
                kind: .counter,
                labels: [],
                help: "Pushes put back in the queue for a later attempt."
            ),
            Entry(
                name: "herald_relay_pushes_held_total",
                kind: .counter,
                labels: [],
                help: "Pushes returned to the queue uncounted because their network was unreachable."
            ),
            Entry(
                name: "herald_relay_webhook_events_total",
                kind: .counter,
                labels: ["type", "outcome"],
                help: "Webhook event attempts by event type and outcome: delivered, retried or failed (given up)."
            ),
            Entry(
                name: "herald_relay_webhook_queue_depth",
                kind: .gauge,
                labels: [],
                help: "Webhook events waiting to be delivered (pending or being sent), read at most every 5 seconds."
            ),
            Entry(
                name: "herald_relay_webhook_attempts_in_flight",
                kind: .gauge,
                labels: [],
                help:
                    "Webhook attempts this node has under way, each of its own ordering key; at the dispatcher's concurrency (32), due events wait for a slot."
            ),
            Entry(
                name: "herald_relay_webhook_delivery_latency_seconds",
                kind: .histogram,
                labels: [],
                help: "Seconds from a webhook event's creation to its delivery (delivered events only)."
            ),
            Entry(
                name: "herald_relay_network_up",
                kind: .gauge,
                labels: ["network"],
                help: "1 while the dispatcher sends to the network, 0 while it holds its pushes as unreachable."
            ),
            Entry(
                name: "herald_relay_queue_depth",
                kind: .gauge,
                labels: [],
                help: "Pushes queued in the outbox (due or waiting for a retry), read from the store at scrape time."
            ),
            Entry(
                name: "herald_relay_pushes_sending",
                kind: .gauge,
                labels: [],
                help:
                    "Pushes claimed by a dispatcher (any node on the store) and not yet completed, read at scrape time."
            ),
            Entry(
                name: "herald_relay_oldest_queued_push_age_seconds",
                kind: .gauge,
                labels: [],
                help: "Seconds since the oldest queued push was accepted; 0 with nothing queued. Read at scrape time."
            ),
            Entry(
                name: "herald_relay_store_up",
                kind: .gauge,
                labels: [],
                help: "1 when the store answered the last scrape's queue query, 0 when it did not."
            ),
            Entry(
                name: "herald_adapter_events_total",
                kind: .counter,
                labels: ["source", "outcome"],
                help: "Contact-center webhook events, by adapter and what became of them."
            ),
            Entry(
                name: "herald_adapter_events_ignored_total",
                kind: .counter,
                labels: ["source"],
                help: "Contact-center webhook events of kinds the adapter does not handle."
            ),
            Entry(
                name: "herald_console_sign_ins_total",
                kind: .counter,
                labels: ["outcome"],
                help:
                    "Console sign-ins by outcome: signed_in, refused (a wrong name or password), throttled (refused unchecked after too many failures)."
            ),
            Entry(
                name: "herald_console_live_streams",
                kind: .gauge,
                labels: [],
                help: "Console live streams (server-sent events) open on this node."
            ),
            Entry(
                name: "herald_api_key_previous_requests_total",
                kind: .counter,
                labels: [],
                help: "Backend requests let in with a previous API key (a rotation not finished yet)."
            ),
            Entry(
                name: "herald_relay_quota_refusals_total",
                kind: .counter,
                labels: ["app", "quota"],
                help: "Messages refused with 429 because a key's or an app's message quota was spent."
            ),
            Entry(
                name: "herald_relay_audit_failures_total",
                kind: .counter,
                labels: [],
                help: "Changes made whose audit log entry could not be written (the store refused it)."
            ),
            Entry(
                name: "herald_apns_provider_tokens_total",
                kind: .counter,
                labels: ["key_id", "source"],
                help:
                    "APNs provider tokens this node took up: adopted from the store, published to it, or signed alone while the store was away."
            ),
            Entry(
                name: HTTPObservability.requestsName,
                kind: .counter,
                labels: ["method", "route", "status"],
                help: "HTTP requests answered, by method, route pattern (never the raw path) and status."
            ),
            Entry(
                name: HTTPObservability.durationName,
                kind: .histogram,
                labels: ["method", "route", "status"],
                help:
                    "Seconds from a request's arrival to its answer being ready to write, by method, route pattern and status."
            ),
            Entry(
                name: BuildInfo.metricName,
                kind: .gauge,
                labels: ["version", "swift"],
                help: "Always 1; the labels name the running build's Herald version and Swift compiler."
            ),
        ] + ProcessMetrics.entries

    /// The five metrics every push network's client writes.
    private static func pushClient(_ network: String) -> [Entry] {
        let name = ["apns": "APNs", "fcm": "FCM", "hms": "Huawei Push Kit"][network] ?? network
        return [
            Entry(
                name: "herald_\(network)_sent_total",
                kind: .counter,
                labels: [],
                help: "Requests sent to \(name), first attempts and retries alike."
            ),
            Entry(
                name: "herald_\(network)_delivered_total",
                kind: .counter,
                labels: [],
                help: "Pushes \(name) accepted."
            ),
            Entry(
                name: "herald_\(network)_retries_total",
                kind: .counter,
                labels: [],
                help: "Attempts to \(name) after a push's first."
            ),
            Entry(
                name: "herald_\(network)_in_flight",
                kind: .gauge,
                labels: [],
                help: "Requests to \(name) sent and not yet answered."
            ),
            Entry(
                name: "herald_\(network)_request_duration_seconds",
                kind: .histogram,
                labels: [],
                help: "Seconds from sending a request to \(name) to its answer, for every answered request."
            ),
            Entry(
                name: "herald_\(network)_failed_total",
                kind: .counter,
                labels: ["reason"],
                help:
                    "Pushes that did not get through \(name), by reason (the network's, or invalid, expired, unreachable…)."
            ),
        ]
    }

    private static let byName: [String: Entry] = Dictionary(
        entries.map { ($0.name, $0) },
        uniquingKeysWith: { first, _ in first }
    )
}
