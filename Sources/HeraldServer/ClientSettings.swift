import Crypto
import Foundation
public import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
public import HeraldFCM
import HeraldFCMCore
import HeraldMacros
public import HeraldPush
public import HeraldStore
public import Logging
public import NIOCore

/// What an APNs client needs, from whichever options or files named it.
@MemberwiseInit
public struct APNsSettings: Sendable {
    public var key: String
    public var keyID: String?
    public var teamID: String
    public var url: String
    public var caFile: String?
    public var connections: Int = 2
    public var requestTimeout: Int = 10
    /// Where the current provider token is kept (mode 0600) so a restart reuses it instead of
    /// signing a new one, which APNs refuses within 20 minutes of the last.
    public var tokenCache: String? = nil

    /// The key id given, or read from an AuthKey_<KEYID>.p8 file name.
    public var resolvedKeyID: String? {
        if let keyID { return keyID }
        let name = (key as NSString).lastPathComponent
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        return String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
    }

    /// One client per environment's URL, all signing with this key's one provider token (APNs
    /// keeps one token per key, whichever host it is sent to), and the manager of that token.
    ///
    /// With `shared`, the token is the cluster's (`SharedProviderToken`, kept in that store):
    /// the token cache file is only read (a young token in it is published rather than a new
    /// one), never written, and the returned service must run beside the clients, prepared
    /// (`prepare()`) before the first push. Without it, this process signs its own and keeps it
    /// in `tokenCache`. `ProviderClients` is what calls this.
    public func makeClients(
        urls: [APNsEnvironment: String],
        logger: Logger,
        group: any EventLoopGroup,
        shared: (any ProviderTokenStore)? = nil,
        feedback: @escaping @Sendable (APNsTokenFeedback) async -> Void = { _ in }
    ) throws(HeraldServerError) -> ([APNsEnvironment: APNsClient], ProviderTokenManager, SharedProviderToken?) {
        guard let keyID = resolvedKeyID else {
            throw .credentials("--key-id is needed when the key file is not named AuthKey_<KEYID>.p8")
        }
        guard let pem = try? String(contentsOfFile: key, encoding: .utf8) else {
            throw .credentials("cannot read the key file \(key)")
        }
        let privateKey: P256.Signing.PrivateKey
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw .credentials("\(key) is not a P-256 private key in PEM form")
        }
        let signer = ProviderTokenSigner(privateKey: privateKey, keyID: keyID, teamID: teamID)
        var configurations: [APNsEnvironment: APNsClientConfiguration] = [:]
        for (environment, url) in urls {
            var configuration: APNsClientConfiguration
            do {
                configuration = try APNsClientConfiguration(url: url)
            } catch {
                throw .configuration("'\(url)' is not an APNs URL (https://host[:port])")
            }
            configuration.caCertificatePath = caFile
            if configuration.serverHostname == nil, caFile != nil {
                // The sandbox's certificate names localhost and the loopback addresses.
                configuration.serverHostname = "localhost"
            }
            configuration.connections = connections
            configuration.requestTimeout = .seconds(Int64(requestTimeout))
            configurations[environment] = configuration
        }
        let tokens: ProviderTokenManager
        var sharedToken: SharedProviderToken?
        if let shared {
            do {
                let made = try SharedProviderToken(
                    store: shared,
                    privateKey: privateKey,
                    keyID: keyID,
                    teamID: teamID,
                    logger: logger
                )
                sharedToken = made
                tokens = made.tokens
                // The token an earlier release kept in the file, published rather than a new one.
                if let cache = tokenCache, let text = try? String(contentsOfFile: cache, encoding: .utf8),
                    made.seed(text)
                {
                    logger.info(
                        "offering the provider token kept in the file to the store",
                        metadata: ["file": "\(cache)"]
                    )
                }
            } catch {
                throw .credentials("cannot derive the key that seals the shared provider token: \(error)")
            }
        } else {
            tokens = cachedTokens(signer: signer, logger: logger)
        }
        var clients: [APNsEnvironment: APNsClient] = [:]
        for (environment, configuration) in configurations {
            do {
                clients[environment] = try APNsClient(
                    configuration: configuration,
                    tokens: tokens,
                    logger: logger,
                    group: group,
                    feedback: feedback
                )
            } catch {
                throw .credentials("cannot make the APNs client for \(urls[environment] ?? url): \(error)")
            }
        }
        return (clients, tokens, sharedToken)
    }

    /// A manager that signs its own tokens and keeps the last in `tokenCache` (if set), reusing
    /// it after a restart.
    private func cachedTokens(signer: ProviderTokenSigner, logger: Logger) -> ProviderTokenManager {
        let cache = tokenCache
        let tokens = ProviderTokenManager(
            signer: signer,
            onNewToken: { token in
                guard let cache else { return }
                // Written beside, then renamed: a crash never leaves half a token.
                let temporary = cache + ".new"
                try? KeyFiles.makeParentDirectory(of: cache)
                try? FileManager.default.removeItem(atPath: temporary)
                guard (try? SecretFile.write(Array((token.text + "\n").utf8), to: temporary, mode: 0o600)) != nil
                else { return }
                _ = rename(temporary, cache)
            }
        )
        if let cache, let text = try? String(contentsOfFile: cache, encoding: .utf8), tokens.restore(text) {
            logger.info("reusing the provider token kept from the last run", metadata: ["file": "\(cache)"])
        }
        return tokens
    }
}

/// What an FCM sender needs, from whichever options or files named it.
@MemberwiseInit
public struct FCMSettings: Sendable {
    public var serviceAccount: String
    public var url: String
    public var caFile: String?
    /// Replaces the file's `token_uri` (the in-process sandbox's port is only known at start).
    public var tokenURI: String? = nil

    public func makeClient(logger: Logger, group: any EventLoopGroup) throws(HeraldServerError) -> FCMClient {
        var account: FCMServiceAccount
        do {
            account = try FCMServiceAccount.load(path: serviceAccount)
        } catch {
            throw .credentials("\(error)")
        }
        if let tokenURI { account.tokenURI = tokenURI }
        guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
            throw .configuration("'\(url)' is not an FCM URL (https://host[:port])")
        }
        var configuration = FCMClientConfiguration(account: account)
        configuration.baseURL = url
        configuration.caCertificatePath = caFile
        do {
            return try FCMClient(configuration: configuration, logger: logger, group: group)
        } catch {
            throw .credentials("cannot make the FCM sender: \(error)")
        }
    }
}
