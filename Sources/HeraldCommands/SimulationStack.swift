import ArgumentParser
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
import HeraldFCM
import HeraldFCMCore
import HeraldProvider
import HeraldPush
import HeraldRelay
import HeraldRelayAPI
import HeraldRelayHTTP
import HeraldRelayProvider
import HeraldSandbox
import HeraldServer
import HeraldSimulation
import HeraldStore
import HeraldStoreSQLite
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Where a simulation's relay and sandbox are.
struct SimulationEndpoints: Sendable {
    var relayURL: String
    var sandboxURL: String
    var apiKey: String
    var bundleID: String
    /// The webhook events the in-process relay wrote for a callback (nil against a running relay,
    /// whose database the simulation does not read).
    var callbackEvents: (@Sendable (String) async throws -> [StoredWebhookEvent])? = nil
    /// The in-process relay's live channels (nil against a running relay): where a flow waits
    /// until the relay has seen the app's channel open or close.
    var live: LiveChannels? = nil
    /// The backend's webhook receiver the in-process relay delivers the app's events to (nil
    /// against a running relay: a flow that reads events starts its own and names it in the app).
    var webhook: SimulationWebhookReceiver? = nil
    /// Whether the relay runs on the simulation's clock (in-process): a flow then moves the
    /// relay's timers on by advancing the clock; a running relay's pass in real time.
    var sharesClock = false
}

/// Sandbox (APNs and FCM), provider and relay in this process, on loopback ports the system picks, in a
/// temporary directory: what `herald simulate` runs against when no URLs are given.
enum SimulationStack {
    static let bundleID = "com.example.herald"

    /// - Parameter webhook: whether the app has the backend's webhook (the simulation's receiver);
    ///   without it the stack stands in for a running relay whose app has none.
    static func with<T: Sendable>(
        clock: TestClock,
        logger: Logger,
        webhook: Bool = true,
        _ body: (SimulationEndpoints) async throws -> T
    ) async throws -> T {
        let (account, _) = try FCMServiceAccount.generate(
            projectID: "herald-simulate",
            tokenURI: "https://unused/token"
        )
        var options = HeraldTestStack.Options(fcmAccount: account)
        options.bundleID = bundleID
        options.teamID = AppleIdentifier.random()
        options.keyID = AppleIdentifier.random()
        options.logger = logger
        var relay = HeraldTestStack.RelayOptions()
        relay.apiKey = "sim_" + ByteEncoding.hex(SecureBytes.random(count: 16).copyBytes())
        relay.clock = clock
        return try await SimulationWebhookReceiver.with(logger: logger) { receiver in
            var options = options
            var relay = relay
            // The backend's webhook, answered on loopback: the relay delivers the app's events.
            if webhook { relay.appWebhook = receiver.settings }
            options.relay = relay
            return try await HeraldTestStack.with(options) { stack in
                let parts = try stack.relay.orThrow()
                return try await body(
                    SimulationEndpoints(
                        relayURL: parts.baseURL,
                        sandboxURL: stack.endpoints.controlURL,
                        apiKey: parts.apiKey,
                        bundleID: bundleID,
                        callbackEvents: { [store = parts.store] id in
                            try await store.callbackWebhookEvents(callbackID: id)
                        },
                        live: parts.relay.live,
                        webhook: webhook ? receiver : nil,
                        sharesClock: true
                    )
                )
            }
        }
    }
}

extension Optional {
    /// The value, or an error saying a part the simulation asked for is missing.
    fileprivate func orThrow() throws -> Wrapped {
        guard let self else { throw ValidationError("the simulation's relay did not start") }
        return self
    }
}
