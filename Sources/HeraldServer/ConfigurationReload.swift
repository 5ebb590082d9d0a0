import HeraldRelay
import HeraldStore
import Logging
import ServiceLifecycle
import UnixSignals

/// On SIGHUP, reads the configuration again (the same flags, environment and file) and applies
/// what can change while the node runs: the log level, the apps (added or changed; an app left
/// out stays registered), the quotas, and the stored API keys (read at once). Anything else
/// (ports, the database, keys on disk, networks) takes a restart, and the log line says so. A
/// configuration that does not resolve leaves the running one as it was.
struct ConfigurationReload: Service {
    let relay: Relay
    let load: @Sendable () throws -> HeraldConfiguration
    let apply: @Sendable (HeraldConfiguration) async throws(HeraldServerError) -> [AppRecord]
    let logger: Logger

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            for await _ in hangups { await reload() }
        }
    }

    func reload() async {
        let configuration: HeraldConfiguration
        do {
            configuration = try load()
        } catch {
            logger.error(
                "configuration not reloaded: the running one stays",
                metadata: ["error": "\(error)"]
            )
            return
        }
        let quotas = configuration.quotas
        relay.quotas.replace(apps: quotas.apps, defaultQuota: quotas.defaultQuota)
        relay.queueCaps.replace(apps: quotas.appCaps, defaultCap: quotas.defaultCap)
        do {
            let apps = try await apply(configuration)
            try await relay.keys.refresh()
            logger.notice(
                "configuration reloaded (log level, apps, quotas, API keys; other settings take a restart)",
                metadata: [
                    "log_level": "\(configuration.logLevel)",
                    "apps": .stringConvertible(apps.count),
                    "quota_apps": .stringConvertible(quotas.apps.count),
                    "api_keys": .stringConvertible(relay.keys.keyring.validCount),
                ]
            )
        } catch {
            logger.error("configuration partly reloaded: \(error)")
        }
        // Last, so the line saying so is written at the level it was asked at (a reload to
        // `warning` would hide its own notice).
        LogLevelSwitch.level = configuration.logLevel
    }
}
