// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldCrypto", targets: ["HeraldCrypto"]),
        .library(name: "HeraldPush", targets: ["HeraldPush"]),
        .library(name: "HeraldAPNsCore", targets: ["HeraldAPNsCore"]),
        .library(name: "HeraldFCMCore", targets: ["HeraldFCMCore"]),
        .library(name: "HeraldWebPushCore", targets: ["HeraldWebPushCore"]),
        .library(name: "HeraldSandbox", targets: ["HeraldSandbox"]),
        .library(name: "HeraldAPNs", targets: ["HeraldAPNs"]),
        .library(name: "HeraldFCM", targets: ["HeraldFCM"]),
        .library(name: "HeraldHMSCore", targets: ["HeraldHMSCore"]),
        .library(name: "HeraldHMS", targets: ["HeraldHMS"]),
        .library(name: "HeraldWebPush", targets: ["HeraldWebPush"]),
        .library(name: "HeraldProvider", targets: ["HeraldProvider"]),
        .library(name: "HeraldProviderAPI", targets: ["HeraldProviderAPI"]),
        .library(name: "HeraldProviderHTTP", targets: ["HeraldProviderHTTP"]),
        .library(name: "HeraldDomain", targets: ["HeraldDomain"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldStoreSQLite", targets: ["HeraldStoreSQLite"]),
        .library(name: "HeraldStorePostgres", targets: ["HeraldStorePostgres"]),
        .library(name: "HeraldDispatch", targets: ["HeraldDispatch"]),
        .library(name: "HeraldRelay", targets: ["HeraldRelay"]),
        .library(name: "HeraldRelayAPI", targets: ["HeraldRelayAPI"]),
        .library(name: "HeraldRelayHTTP", targets: ["HeraldRelayHTTP"]),
        .library(name: "HeraldConsoleCore", targets: ["HeraldConsoleCore"]),
        .library(name: "HeraldConsole", targets: ["HeraldConsole"]),
        .library(name: "HeraldAdapters", targets: ["HeraldAdapters"]),
        .library(name: "HeraldDevice", targets: ["HeraldDevice"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        .library(name: "HeraldSimulation", targets: ["HeraldSimulation"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"5.0.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // One trait, named: SwiftPM 6.3 passes a package's enabled traits to the compiler as `-D`
        // flags in a set's order, which differs from one `swift build` to the next, so with
        // Hummingbird's two default traits every build saw a new command line and recompiled its
        // modules (114 files). Herald uses no swift-configuration reader (`ConfigurationSupport`).
        .package(
            url: "https://github.com/hummingbird-project/hummingbird.git",
            from: "2.28.1",
            traits: ["FullFoundation"]
        ),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // OTLP over HTTP only: the default traits add the gRPC exporter, whose packages would add
        // minutes to every clean build. Only HeraldServer, which bootstraps the exporter, uses it.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // `@MemberwiseInit`: a struct's synthesized memberwise initializer at the struct's own
        // access level (a public wire type's public init, not written out by hand).
        .macro(
            name: "HeraldMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(name: "HeraldMacros", dependencies: ["HeraldMacrosPlugin"], swiftSettings: swiftSettings),
        // The macro's expansions, checked by swift-syntax's own expander.
        .testTarget(
            name: "HeraldMacrosTests",
            dependencies: ["HeraldMacrosPlugin"]
                + ["SwiftSyntaxMacroExpansion", "SwiftSyntaxMacrosGenericTestSupport"].map {
                    .product(name: $0, package: "swift-syntax")
                },
            swiftSettings: swiftSettings
        ),
        // libsodium from the system (Debian: libsodium-dev), found through pkg-config.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // Byte encodings shared by the crypto core and the APNs/FCM protocol code (base64url).
        // No dependencies but the memberwise-init macro.
        .target(
            name: "HeraldEncoding",
            dependencies: ["HeraldMacros"],
            swiftSettings: swiftSettings
        ),
        // The crypto core: key agreement, the envelope, contents, budget, keys at rest.
        // Depends on libsodium only: no NIO, no Foundation networking.
        .target(
            name: "HeraldCrypto",
            dependencies: ["HeraldMacros", "CSodium", "HeraldDomain", "HeraldEncoding"],
            swiftSettings: swiftSettings
        ),
        // The push every stage passes on (relay, outbox, dispatcher, provider stage) and its
        // outcome, typed per network. No dependencies but the memberwise-init macro.
        .target(
            name: "HeraldPush",
            dependencies: ["HeraldMacros"],
            swiftSettings: swiftSettings
        ),
        // APNs protocol facts shared by the sandbox and the provider: reasons, headers, ES256
        // provider tokens (push types and priorities come from HeraldPush). No transport.
        .target(
            name: "HeraldAPNsCore",
            dependencies: ["HeraldPush", "HeraldEncoding", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // FCM HTTP v1 protocol facts shared by the sandbox and the sender: messages and their
        // validation, error bodies and codes, service accounts and RS256 OAuth2 assertions.
        .target(
            name: "HeraldFCMCore",
            dependencies: [
                "HeraldMacros",
                "HeraldEncoding",
                "HeraldPush",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // Huawei Push Kit's facts shared by the sandbox and the sender: the send body, the
        // result codes and what each means for a push, the app's OAuth client credentials.
        .target(
            name: "HeraldHMSCore",
            dependencies: ["HeraldMacros", "HeraldEncoding", "HeraldPush"],
            swiftSettings: swiftSettings
        ),
        // Web Push protocol facts shared by the sandbox and the sender: RFC 8291 `aes128gcm`
        // message encryption, RFC 8292 VAPID keys, tokens and their checks, subscriptions, the
        // RFC 8030 request headers and the push services' answers. No transport.
        .target(
            name: "HeraldWebPushCore",
            dependencies: ["HeraldPush", "HeraldEncoding", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // The Web Push sender: encrypts, signs with VAPID, posts to each subscription's push
        // service, and reads its answer.
        .target(
            name: "HeraldWebPush",
            dependencies: [
                "HeraldMacros",
                "HeraldWebPushCore",
                "HeraldClientSupport",
                "HeraldDomain",
                "HeraldEncoding",
                "HeraldPush",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The local APNs, FCM, Web Push and Push Kit look-alike: HTTP/2 + TLS listeners, device connections, faults,
        // inspection.
        .target(
            name: "HeraldSandbox",
            dependencies: [
                "HeraldMacros",
                "HeraldDomain",
                "HeraldEncoding",
                "HeraldPush",
                "HeraldAPNsCore",
                "HeraldHTTPSupport",
                "HeraldObservability",
                .product(name: "Prometheus", package: "swift-prometheus"),
                "HeraldFCMCore",
                "HeraldHMSCore",
                "HeraldWebPushCore",
                "HeraldCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the push clients do alike: metrics per network, rate-limited operator alerts; and
        // what the FCM and Push Kit senders share: the HTTP client and its answers, the OAuth
        // access-token cache, the retry loop and the batch fan-out.
        .target(
            name: "HeraldClientSupport",
            dependencies: [
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                "HeraldMacros",
                "HeraldDomain",
                "HeraldPush",
            ],
            swiftSettings: swiftSettings
        ),
        // The provider's APNs client: HTTP/2 connection pool, shared provider token, Apple's
        // answer rules, retries and dead-token feedback.
        .target(
            name: "HeraldAPNs",
            dependencies: [
                "HeraldMacros",
                "HeraldAPNsCore",
                "HeraldDomain",
                "HeraldClientSupport",
                "HeraldPush",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        // The provider's FCM HTTP v1 sender: OAuth2 service-account tokens, messages:send over
        // HTTP/2 (async-http-client), FCM's answer rules, retries and dead-token feedback.
        .target(
            name: "HeraldFCM",
            dependencies: [
                "HeraldMacros",
                "HeraldFCMCore",
                "HeraldDomain",
                "HeraldClientSupport",
                "HeraldPush",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The provider's Huawei Push Kit sender: client-credentials access tokens, messages:send
        // (async-http-client), Push Kit's result codes, retries and dead-token feedback.
        .target(
            name: "HeraldHMS",
            dependencies: [
                "HeraldClientSupport", "HeraldDomain", "HeraldHMSCore", "HeraldMacros",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The provider stage: each push to the APNs client or the FCM sender, outcomes back as
        // `PushOutcome`. No HTTP service: `herald provider` serves it through HeraldProviderHTTP,
        // the relay calls it in process.
        .target(
            name: "HeraldProvider",
            dependencies: [
                "HeraldMacros",
                "HeraldTracing",
                "HeraldPush",
                "HeraldDomain",
                "HeraldAPNs",
                "HeraldFCM",
                "HeraldFCMCore",
                "HeraldAPNsCore",
                "HeraldWebPush",
                "HeraldHMS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The batch API's JSON (`POST /v1/push/batch`): the wire form of `Push` and `PushOutcome`,
        // shared by `herald provider`'s service and the relay's remote sender.
        .target(
            name: "HeraldProviderAPI",
            dependencies: ["HeraldMacros", "HeraldPush", "HeraldAPNsCore", "HeraldFCMCore", "HeraldEncoding"],
            swiftSettings: swiftSettings
        ),
        // What every Herald HTTP service does alike: bearer credentials compared in constant time,
        // JSON answers and the one error body, and the listeners' connection limits (header-read
        // and idle timeouts, a connection cap, a JSON 400 for unparsable requests).
        .target(
            name: "HeraldHTTPSupport",
            dependencies: [
                "HeraldMacros",
                "HeraldEncoding",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // `herald provider`'s HTTP service (Hummingbird): the batch API in front of a provider stage.
        .target(
            name: "HeraldProviderHTTP",
            dependencies: [
                "HeraldEncoding",
                "HeraldHTTPSupport",
                "HeraldObservability",
                .product(name: "Logging", package: "swift-log"),
                "HeraldProvider",
                "HeraldProviderAPI",
                "HeraldPush",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // What every Herald HTTP listener shares for operators: the metrics factory with help
        // texts (MetricCatalog), build info, process metrics, HTTP request metrics and the access
        // log, `/metrics`, `/health/live` and `/health/ready`.
        .target(
            name: "HeraldObservability",
            dependencies: [
                "HeraldHTTPSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // One batching rule for work that arrives together (the stores' group commit, batched
        // statements and reads, the dispatcher's outcome writes), and the wake signal the loops
        // that drain such work wait on. No dependencies.
        .target(
            name: "HeraldBatching",
            swiftSettings: swiftSettings
        ),
        // One trace per push (docs/tracing.md): spans through swift-distributed-tracing's API, and
        // a push's span context as a W3C `traceparent` that travels with it through the queue.
        // No exporter: HeraldServer bootstraps one when tracing is configured.
        .target(
            name: "HeraldTracing",
            dependencies: [.product(name: "Tracing", package: "swift-distributed-tracing")],
            swiftSettings: swiftSettings
        ),
        // The vocabulary every layer speaks (platforms, push and call states, policies, scopes):
        // plain enums with no I/O, below the store, the wire types and the phone.
        .target(
            name: "HeraldDomain",
            dependencies: ["HeraldMacros"],
            swiftSettings: swiftSettings
        ),
        // What the relay keeps: the records and the `HeraldStore` protocol. No storage engine.
        .target(
            name: "HeraldStore",
            dependencies: ["HeraldMacros", "HeraldDomain", "HeraldPush"],
            swiftSettings: swiftSettings
        ),
        // `HeraldStore` on embedded SQLite (GRDB): WAL, migrations, group commit, leased claims.
        .target(
            name: "HeraldStoreSQLite",
            dependencies: [
                "HeraldBatching",
                "HeraldEncoding",
                "HeraldStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // `HeraldStore` on PostgreSQL (postgres-nio): several relay nodes on one database, claims
        // with SKIP LOCKED, migrations under an advisory lock, wake-ups by LISTEN/NOTIFY.
        .target(
            name: "HeraldStorePostgres",
            dependencies: [
                "HeraldBatching",
                "HeraldStore",
                "HeraldPush",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The relay's `/v1` requests and answers (JSON), shared by the HTTP service and the phone.
        // No logic, no transport, no store: the relay builds its views of stored records.
        .target(
            name: "HeraldRelayAPI",
            dependencies: ["HeraldMacros", "HeraldDomain", "HeraldEncoding", "HeraldPush"],
            swiftSettings: swiftSettings
        ),
        // Test support shared by the test targets: the scripted push sender, a manual clock, and
        // the records the store tests build. Not shipped.
        .target(
            name: "HeraldTestSupport",
            dependencies: [
                "HeraldMacros",
                "HeraldDomain",
                "HeraldPush",
                "HeraldStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Every promise of the store protocols, written once as a rule any engine runs (with
        // swift-testing's expectations): SQLite now, PostgreSQL next. Not shipped.
        .target(
            name: "HeraldStoreConformance",
            dependencies: ["HeraldStore", "HeraldPush", "HeraldTestSupport"],
            swiftSettings: swiftSettings
        ),
        // The dispatcher: drains the outbox into a push sender (claims, hand-offs, outcomes,
        // network health), its loop and its outcome writes as state machines. Knows the store and
        // the sender only through protocols: no relay, no HTTP, no storage engine.
        .target(
            name: "HeraldDispatch",
            dependencies: [
                "HeraldTracing",
                "HeraldBatching",
                "HeraldDomain",
                "HeraldPush",
                "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The relay's logic: activation and key agreement, presence, sealing, ingest. Knows a
        // store and the dispatcher's hand-off only through protocols, and no transport.
        .target(
            name: "HeraldRelay",
            dependencies: [
                "HeraldMacros",
                "HeraldTracing",
                "HeraldBatching",
                "HeraldDispatch",
                "HeraldEncoding",
                "HeraldPush",
                "HeraldRelayAPI",
                "HeraldStore",
                "HeraldCrypto",
                "HeraldWebPushCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: swiftSettings
        ),
        // Contact-center webhooks (Genesys Cloud, NICE CXone): events in, relay messages out.
        .target(
            name: "HeraldAdapters",
            dependencies: [
                "HeraldMacros",
                "HeraldEncoding",
                "HeraldHTTPSupport",
                "HeraldRelayAPI",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The relay's `/v1` HTTP API (Hummingbird), `/health` and `/metrics`.
        .target(
            name: "HeraldRelayHTTP",
            dependencies: [
                "HeraldTracing",
                "HeraldEncoding",
                "HeraldHTTPSupport",
                "HeraldPush",
                "HeraldObservability",
                "HeraldRelay",
                "HeraldRelayAPI",
                "HeraldAdapters",
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Metrics", package: "swift-metrics"),
                "HeraldStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The operator console's rules without I/O: who may do what, sign-in throttling, session
        // and CSRF tokens, the overview's figures and charts, a push's road, the live feed's diff.
        .target(
            name: "HeraldConsoleCore",
            dependencies: [
                "HeraldMacros",
                "HeraldEncoding",
                "HeraldPush",
                "HeraldStore",
                "HeraldRelayAPI",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The operator console at `/console`: pages (swift-mustache), sign-in, the live stream
        // (server-sent events), simulations; on the relay's own router.
        .target(
            name: "HeraldConsole",
            dependencies: [
                "HeraldConsoleCore",
                "HeraldCrypto",
                "HeraldEncoding",
                "HeraldHTTPSupport",
                "HeraldRelay",
                "HeraldRelayAPI",
                "HeraldRelayHTTP",
                "HeraldStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The relay's sender for a remote `herald provider` (the batch API over HTTP); in process
        // the relay's dispatcher calls the provider stage itself.
        .target(
            name: "HeraldRelayProvider",
            dependencies: [
                "HeraldPush",
                "HeraldProviderAPI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The webhook dispatcher's HTTP transport (async-http-client): signed events to the apps'
        // receivers.
        .target(
            name: "HeraldWebhookHTTP",
            dependencies: [
                "HeraldRelay",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The phone side: the app-group store, the SDK session with the late-token rule, the
        // device connection to the sandbox, the NSE and PushKit/CallKit emulators.
        .target(
            name: "HeraldDevice",
            dependencies: [
                "HeraldMacros",
                "HeraldCrypto",
                "HeraldPush",
                "HeraldWebPushCore",
                "HeraldEncoding",
                .product(name: "Crypto", package: "swift-crypto"),
                "HeraldDomain",
                "HeraldRelayAPI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // A running Herald built from one resolved configuration (flags over environment over file):
        // the relay with the provider stage in process or remote, the sandbox in sandbox mode, keys.
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldConsole",
                "HeraldConsoleCore",
                "HeraldMacros",
                "HeraldTracing",
                "HeraldEncoding",
                "HeraldHTTPSupport",
                "HeraldObservability",
                "HeraldAdapters",
                "HeraldAPNs",
                "HeraldAPNsCore",
                "HeraldCrypto",
                "HeraldDispatch",
                "HeraldFCM",
                "HeraldHMS",
                "HeraldHMSCore",
                "HeraldWebPush",
                "HeraldWebPushCore",
                "HeraldFCMCore",
                "HeraldProvider",
                "HeraldProviderHTTP",
                "HeraldPush",
                "HeraldRelay",
                "HeraldRelayAPI",
                "HeraldRelayHTTP",
                "HeraldRelayProvider",
                "HeraldSandbox",
                "HeraldStore",
                "HeraldStorePostgres",
                "HeraldStoreSQLite",
                "HeraldWebhookHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        // One call starts a sandbox, and on request the provider's clients and a relay, on loopback
        // (real HTTP/2 + TLS), with a manual clock: what `herald simulate` runs, and what the
        // end-to-end tests build on.
        .target(
            name: "HeraldSimulation",
            dependencies: [
                "HeraldConsole",
                "HeraldHMS",
                "HeraldHMSCore",
                "HeraldWebPush",
                "HeraldWebPushCore",
                "HeraldTracing",
                "HeraldHTTPSupport",
                "HeraldServer",
                "HeraldAdapters",
                "HeraldAPNs",
                "HeraldAPNsCore",
                "HeraldCrypto",
                "HeraldDispatch",
                "HeraldFCM",
                "HeraldFCMCore",
                "HeraldProvider",
                "HeraldProviderHTTP",
                "HeraldPush",
                "HeraldRelay",
                "HeraldRelayHTTP",
                "HeraldRelayProvider",
                "HeraldSandbox",
                "HeraldStore",
                "HeraldStoreSQLite",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The `herald` subcommands, as a library so tests can run them in-process.
        .target(
            name: "HeraldCommands",
            dependencies: [
                "HeraldConsoleCore",
                "HeraldEncoding",
                "HeraldHTTPSupport",
                "HeraldObservability",
                "HeraldCrypto",
                "HeraldFCM",
                "HeraldFCMCore",
                "HeraldAPNsCore",
                "HeraldSandbox",
                "HeraldAPNs",
                "HeraldProvider",
                "HeraldProviderAPI",
                "HeraldProviderHTTP",
                "HeraldPush",
                "HeraldStore",
                "HeraldStorePostgres",
                "HeraldStoreSQLite",
                "HeraldRelay",
                "HeraldRelayAPI",
                "HeraldRelayHTTP",
                "HeraldRelayProvider",
                "HeraldDevice",
                "HeraldAdapters",
                "HeraldServer",
                "HeraldSimulation",
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald",
            dependencies: ["HeraldCommands"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldWebPushCoreTests",
            dependencies: [
                "HeraldWebPushCore",
                "HeraldEncoding",
                "HeraldPush",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldPushTests",
            dependencies: ["HeraldPush", "HeraldProviderAPI"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldConsoleTests",
            dependencies: [
                "HeraldConsoleCore",
                "HeraldConsole",
                "HeraldCrypto",
                "HeraldFCMCore",
                "HeraldPush",
                "HeraldRelay",
                "HeraldRelayAPI",
                "HeraldSandbox",
                "HeraldSimulation",
                "HeraldStore",
                "HeraldTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldHTTPSupportTests",
            dependencies: [
                "HeraldEncoding",
                "HeraldHTTPSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                "HeraldEncoding",
                "HeraldRelayAPI",
                .product(name: "Yams", package: "Yams"),
                "HeraldObservability",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                "HeraldServer",
                "HeraldSandbox",
                "HeraldSimulation",
                "HeraldTestSupport",
                "HeraldFCMCore",
                "HeraldPush",
                "HeraldRelayProvider",
                "HeraldStore",
                "HeraldStoreSQLite",
                "HeraldAPNs",
                "HeraldAPNsCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCryptoTests",
            dependencies: [
                "HeraldCrypto",
                "HeraldDomain",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldSandboxTests",
            dependencies: [
                "HeraldEncoding",
                "HeraldSimulation",
                "HeraldTestSupport",
                "HeraldSandbox",
                "HeraldAPNsCore",
                "HeraldFCMCore",
                "HeraldHMSCore",
                "HeraldWebPushCore",
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldAPNsTests",
            dependencies: [
                "HeraldSimulation",
                "HeraldTestSupport",
                "HeraldAPNs",
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                "HeraldProvider",
                "HeraldProviderAPI",
                "HeraldProviderHTTP",
                "HeraldPush",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                "HeraldAPNsCore",
                "HeraldSandbox",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldFCMTests",
            dependencies: [
                "HeraldSimulation",
                "HeraldTestSupport",
                "HeraldFCM",
                "HeraldFCMCore",
                "HeraldSandbox",
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldHMSTests",
            dependencies: ["HeraldHMS", "HeraldHMSCore", "HeraldSandbox", "HeraldClientSupport"]
                + [
                    ("AsyncHTTPClient", "async-http-client"), ("Logging", "swift-log"), ("NIOCore", "swift-nio"),
                    ("NIOHTTP1", "swift-nio"), ("NIOSSL", "swift-nio-ssl"),
                    ("ServiceLifecycle", "swift-service-lifecycle"),
                ].map { Target.Dependency.product(name: $0.0, package: $0.1) },
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCommandsTests",
            dependencies: [
                "HeraldCommands",
                "HeraldCrypto",
                "HeraldFCM",
                "HeraldFCMCore",
                "HeraldProvider",
                "HeraldProviderAPI",
                "HeraldProviderHTTP",
                "HeraldPush",
                "HeraldSandbox",
                "HeraldServer",
                "HeraldStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldDeviceTests",
            dependencies: [
                "HeraldSimulation",
                "HeraldTestSupport",
                "HeraldDevice",
                "HeraldCommands",
                "HeraldCrypto",
                "HeraldRelay",
                "HeraldRelayAPI",
                "HeraldStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldStorePostgresTests",
            dependencies: [
                "HeraldStore",
                "HeraldStoreConformance",
                "HeraldStorePostgres",
                "HeraldStoreSQLite",
                "HeraldTestSupport",
                "HeraldPush",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldBatchingTests",
            dependencies: ["HeraldBatching"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldDispatchTests",
            dependencies: ["HeraldDispatch"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldStoreSQLiteTests",
            dependencies: [
                "HeraldStore",
                "HeraldStoreConformance",
                "HeraldStoreSQLite",
                "HeraldTestSupport",
                "HeraldPush",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldRelayTests",
            dependencies: [
                "HeraldConsole",
                "HeraldTracing",
                "HeraldEncoding",
                "HeraldSimulation",
                "HeraldObservability",
                "HeraldServer",
                "HeraldStorePostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                "HeraldHTTPSupport",
                "HeraldRelay",
                "HeraldDispatch",
                "HeraldRelayAPI",
                "HeraldAdapters",
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                "HeraldProvider",
                "HeraldProviderAPI",
                "HeraldProviderHTTP",
                "HeraldPush",
                "HeraldRelayHTTP",
                "HeraldRelayProvider",
                "HeraldStore",
                "HeraldStoreSQLite",
                "HeraldTestSupport",
                "HeraldCrypto",
                "HeraldAPNs",
                "HeraldAPNsCore",
                "HeraldFCM",
                "HeraldFCMCore",
                "HeraldWebPush",
                "HeraldWebPushCore",
                "HeraldSandbox",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Webhook fixtures, read from the source tree.
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ]
)
