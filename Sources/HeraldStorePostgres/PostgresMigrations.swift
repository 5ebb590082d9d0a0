import Foundation
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The PostgreSQL schema, one migration per released change, applied once however many nodes
/// start at the same moment.
///
/// The whole upgrade runs in one transaction holding an advisory lock named after the schema:
/// the first node to get it migrates, the others wait for its commit and then find nothing left
/// to do. PostgreSQL's DDL is transactional, so a failed migration leaves the schema as it was.
enum PostgresMigrations {
    /// The migrations, in order; a migration is never edited once released, only added. Senders
    /// and chat authors were sealed at rest before this engine's first release, so it has never
    /// held one in the clear (`SealingStore` has nothing to do here).
    static let all = first + later

    /// v1 to v4, the schema issue 16 released.
    static let first: [(name: String, sql: [String])] = [
        (
            "v1: the relay's tables",
            [
                """
                CREATE TABLE apps (
                    id TEXT PRIMARY KEY,
                    team_id TEXT NOT NULL,
                    content_policy TEXT NOT NULL,
                    alert_title TEXT NOT NULL,
                    alert_body TEXT NOT NULL,
                    message_ttl BIGINT NOT NULL,
                    call_ttl BIGINT NOT NULL,
                    collapse_by_conversation BOOLEAN NOT NULL DEFAULT false
                )
                """,
                """
                CREATE TABLE devices (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    app_id TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    messaging_token TEXT UNIQUE,
                    voip_token TEXT UNIQUE,
                    key_id TEXT NOT NULL,
                    previous_key_id TEXT,
                    device_public_key BYTEA NOT NULL,
                    relay_public_key BYTEA NOT NULL,
                    sealed_relay_secret_key BYTEA NOT NULL,
                    sealed_session_keys BYTEA NOT NULL,
                    credential_hash BYTEA NOT NULL,
                    token_dead_reason TEXT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX devices_by_user ON devices (user_id, created_at, id)",
                """
                CREATE TABLE presence (
                    device_id TEXT PRIMARY KEY REFERENCES devices (id) ON DELETE CASCADE,
                    user_id TEXT NOT NULL,
                    conversation TEXT,
                    state TEXT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE messages (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    conversation TEXT NOT NULL,
                    sealed_sender BYTEA NOT NULL,
                    sealed_text BYTEA NOT NULL,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX messages_by_expiry ON messages (expires_at)",
                """
                CREATE TABLE ingests (
                    idempotency_key TEXT PRIMARY KEY,
                    receipt BYTEA NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX ingests_by_age ON ingests (created_at)",
                // As on SQLite since its v6: the network in a column, each network's fields in
                // their own (NULL for the other network).
                """
                CREATE TABLE outbox (
                    push_id TEXT PRIMARY KEY,
                    device_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    subject_id TEXT NOT NULL,
                    priority BIGINT NOT NULL,
                    network TEXT NOT NULL CHECK (network IN ('apns', 'fcm')),
                    topic TEXT NOT NULL,
                    push_type TEXT,
                    apns_priority BIGINT,
                    apns_id TEXT,
                    fcm_priority TEXT,
                    collapse_id TEXT,
                    attempts BIGINT NOT NULL,
                    next_attempt_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    state TEXT NOT NULL,
                    last_reason TEXT,
                    claim_owner TEXT,
                    claim_until BIGINT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    CHECK ((network = 'apns') = (push_type IS NOT NULL AND apns_priority IS NOT NULL
                        AND apns_id IS NOT NULL AND fcm_priority IS NULL))
                )
                """,
                // Only queued and sending pushes are looked up by state: delivered history stays
                // out of these indexes, so claims walk small trees.
                "CREATE INDEX outbox_queued ON outbox (priority DESC, created_at ASC) WHERE state = 'queued'",
                "CREATE INDEX outbox_queued_due ON outbox (next_attempt_at) WHERE state = 'queued'",
                // Claims for one network while the other is down read it in the queue's order,
                // without walking past the other network's backlog.
                """
                CREATE INDEX outbox_queued_by_network ON outbox (network, priority DESC, created_at ASC)
                WHERE state = 'queued'
                """,
                "CREATE INDEX outbox_sending ON outbox (claim_until) WHERE state = 'sending'",
                "CREATE INDEX outbox_finished ON outbox (updated_at) WHERE state NOT IN ('queued', 'sending')",
                // The payload never changes after ingest; kept apart, the rows that do change stay
                // small.
                "CREATE TABLE outbox_payloads (push_id TEXT PRIMARY KEY, payload TEXT NOT NULL)",
                """
                CREATE TABLE delivery_log (
                    id BIGSERIAL PRIMARY KEY,
                    push_id TEXT NOT NULL,
                    at BIGINT NOT NULL,
                    state TEXT NOT NULL,
                    reason TEXT
                )
                """,
                "CREATE INDEX delivery_log_by_push ON delivery_log (push_id)",
                // Each conversation's last position, one row taken by every append: concurrent
                // appends on several nodes get 1, 2, 3 … without a gap or a repeat.
                "CREATE TABLE transcript_heads (conversation TEXT PRIMARY KEY, last_position BIGINT NOT NULL)",
                """
                CREATE TABLE transcript_events (
                    conversation TEXT NOT NULL,
                    position BIGINT NOT NULL,
                    user_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    sealed_author BYTEA NOT NULL,
                    from_agent BOOLEAN NOT NULL,
                    sealed_text BYTEA NOT NULL,
                    at BIGINT NOT NULL,
                    PRIMARY KEY (conversation, position)
                )
                """,
                """
                CREATE TABLE chat_disconnects (
                    device_id TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
                    conversation TEXT NOT NULL,
                    position BIGINT NOT NULL,
                    at BIGINT NOT NULL,
                    pushed BOOLEAN NOT NULL,
                    PRIMARY KEY (device_id, conversation)
                )
                """,
                "CREATE INDEX chat_disconnects_pending ON chat_disconnects (conversation) WHERE NOT pushed",
                """
                CREATE TABLE chats (
                    conversation TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    started_at BIGINT NOT NULL,
                    last_event_at BIGINT NOT NULL,
                    ended_at BIGINT
                )
                """,
                "CREATE INDEX chats_open ON chats (last_event_at) WHERE ended_at IS NULL",
                "CREATE INDEX chats_ended ON chats (ended_at) WHERE ended_at IS NOT NULL",
            ]
        ),
        (
            "v2: live sessions and handovers",
            [
                // Which node holds each device's live channel, for as long as that node renews it.
                """
                CREATE TABLE live_sessions (
                    device_id TEXT PRIMARY KEY,
                    node_id TEXT NOT NULL,
                    session_id TEXT NOT NULL,
                    conversation TEXT,
                    expires_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX live_sessions_by_node ON live_sessions (node_id)",
                // Messages handed to a node's live channel and not acknowledged yet: ids only,
                // the content stays sealed in messages.
                """
                CREATE TABLE live_handovers (
                    message_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    node_id TEXT NOT NULL,
                    deadline BIGINT NOT NULL,
                    taken BOOLEAN NOT NULL DEFAULT false,
                    PRIMARY KEY (message_id, device_id)
                )
                """,
                "CREATE INDEX live_handovers_by_node ON live_handovers (node_id) WHERE NOT taken",
                "CREATE INDEX live_handovers_by_deadline ON live_handovers (deadline)",
            ]
        ),
        (
            "v3: provider tokens",
            [
                // One row per APNs key: the token every node sends with, sealed by the caller with
                // a key derived from the .p8 (never in the clear), and a version for
                // compare-and-set.
                """
                CREATE TABLE provider_tokens (
                    team_id TEXT NOT NULL,
                    key_id TEXT NOT NULL,
                    version BIGINT NOT NULL,
                    sealed_token BYTEA NOT NULL,
                    issued_at BIGINT NOT NULL,
                    PRIMARY KEY (team_id, key_id)
                )
                """
            ]
        ),
        (
            "v4: pushes listed newest first",
            [
                // As on SQLite's v12: `GET /v1/pushes` pages through the outbox newest first, by
                // device (and so by user, through the user's devices) or over all of it; each
                // order has its index, so a page reads its rows instead of sorting every push.
                "CREATE INDEX outbox_by_device ON outbox (device_id, created_at, push_id)",
                "CREATE INDEX outbox_by_age ON outbox (created_at, push_id)",
            ]
        ),
    ]

    /// The newest schema version this build knows.
    static var latest: Int { all.count }

    /// Brings the schema up to date on one connection of its own, so a wrong URL or an unreachable
    /// server fails here, at once and by name, rather than inside a pool that keeps retrying.
    static func run(configuration: PostgresStoreConfiguration, logger: Logger) async throws(StoreError) {
        let connection: PostgresConnection
        do {
            connection = try await connect(configuration, logger: logger)
        } catch {
            throw StoreError.unavailable.with(
                detail: "cannot connect to \(configuration): \(PostgresFailure.describe(error))"
            )
        }
        do {
            try await migrate(connection, schema: configuration.schema, logger: logger)
            try? await connection.close()
        } catch let error as StoreError {
            try? await connection.close()
            throw error
        } catch {
            try? await connection.close()
            throw StoreError.unavailable.with(
                detail: "cannot migrate the schema on \(configuration): \(PostgresFailure.describe(error))"
            )
        }
    }

    /// Connects and reads the schema's version without migrating (a database Herald never
    /// started on is at version 0): for `herald check`, whose line names the database, so the
    /// error does not.
    static func status(
        configuration: PostgresStoreConfiguration,
        logger: Logger
    ) async throws(StoreError)
        -> SchemaStatus
    {
        let connection: PostgresConnection
        do {
            connection = try await connect(configuration, logger: logger)
        } catch {
            throw StoreError.unavailable.with(detail: "cannot connect: \(connectProblem(error))")
        }
        do {
            var version = 0
            // The migrations table lives in the schema the URL names (its search_path); none
            // there yet is version 0.
            var exists = false
            for row in try await connection.run(
                "SELECT to_regclass('herald_migrations') IS NOT NULL",
                logger: logger
            ) {
                exists = try row.decode(Bool.self)
            }
            if exists {
                for row in try await connection.run(
                    "SELECT COALESCE(MAX(version), 0)::BIGINT FROM herald_migrations",
                    logger: logger
                ) {
                    version = Int(try row.decode(Int64.self))
                }
            }
            try? await connection.close()
            return SchemaStatus(version: version, latest: latest)
        } catch {
            try? await connection.close()
            throw StoreError.unavailable.with(
                detail: "cannot read the schema version: \(PostgresFailure.describe(error))"
            )
        }
    }

    /// A refused or unreachable server in a few words (`connection refused`), other errors as
    /// `PostgresFailure` says them.
    private static func connectProblem(_ error: any Error) -> String {
        if let error = error as? PSQLError, let underlying = error.underlying as? NIOConnectionError,
            let io = underlying.connectionErrors.first?.error as? IOError
        {
            return String(cString: strerror(io.errnoCode)).lowercased()
        }
        return PostgresFailure.describe(error)
    }

    static func connect(_ configuration: PostgresStoreConfiguration, logger: Logger) async throws -> PostgresConnection
    {
        let tls: PostgresConnection.Configuration.TLS
        switch configuration.tls {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var connectionConfiguration = PostgresConnection.Configuration(
            host: configuration.host,
            port: configuration.port,
            username: configuration.user,
            password: configuration.password,
            database: configuration.database,
            tls: tls
        )
        connectionConfiguration.options.connectTimeout = .milliseconds(configuration.connectTimeout.milliseconds)
        connectionConfiguration.options.additionalStartupParameters = configuration.startupParameters
        return try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(),
            configuration: connectionConfiguration,
            id: 0,
            logger: logger
        ).get()
    }

    private static func migrate(_ connection: PostgresConnection, schema: String, logger: Logger) async throws {
        try await connection.run("BEGIN", logger: logger)
        do {
            // The node's statement timeout bounds requests, not the upgrade: the nodes that start
            // beside the one migrating wait for its lock longer than that, and an index built on a
            // large outbox can take minutes. A dead migrator's lock ends with its connection.
            try await connection.run("SET LOCAL statement_timeout = 0", logger: logger)
            try await connection.run(
                "SELECT pg_advisory_xact_lock(hashtext('herald migrations ' || \(schema)))",
                logger: logger
            )
            try await connection.run(
                "CREATE SCHEMA IF NOT EXISTS \(unescaped: schema)",
                logger: logger
            )
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS herald_migrations (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """,
                logger: logger
            )
            var current = 0
            for row in try await connection.run(
                "SELECT COALESCE(MAX(version), 0)::BIGINT FROM herald_migrations",
                logger: logger
            ) {
                let version = try row.decode(Int64.self)
                current = Int(version)
            }
            if current > latest {
                throw StoreError.unavailable.with(
                    detail:
                        "the database schema is at version \(current), newer than this build knows (\(latest)): "
                        + "upgrade this node before starting it"
                )
            }
            for (index, migration) in all.enumerated() where index + 1 > current {
                for statement in migration.sql {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.run(
                    "INSERT INTO herald_migrations (version, name) VALUES (\(index + 1), \(migration.name))",
                    logger: logger
                )
                logger.info("database migrated", metadata: ["version": "\(index + 1)", "name": "\(migration.name)"])
            }
            try await connection.run("COMMIT", logger: logger)
        } catch {
            _ = try? await connection.run("ROLLBACK", logger: logger)
            throw error
        }
    }
}
