import Foundation
public import HeraldAPNs
import HeraldAPNsCore
import HeraldCrypto
public import HeraldFCM
import HeraldFCMCore
public import Logging
public import NIOCore

/// What an APNs client needs, from whichever options or files named it.
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

    public init(
        key: String,
        keyID: String?,
        teamID: String,
        url: String,
        caFile: String?,
        connections: Int = 2,
        requestTimeout: Int = 10,
        tokenCache: String? = nil
    ) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.url = url
        self.caFile = caFile
        self.connections = connections
        self.requestTimeout = requestTimeout
        self.tokenCache = tokenCache
    }

    /// The key id given, or read from an AuthKey_<KEYID>.p8 file name.
    public var resolvedKeyID: String? {
        if let keyID { return keyID }
        let name = (key as NSString).lastPathComponent
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        return String(name.dropFirst("AuthKey_".count).dropLast(".p8".count))
    }

    public func makeClient(
        logger: Logger,
        group: any EventLoopGroup,
        feedback: @escaping @Sendable (APNsTokenFeedback) async -> Void = { _ in }
    ) throws(HeraldServerError) -> (APNsClient, ProviderTokenManager) {
        guard let keyID = resolvedKeyID else {
            throw .credentials("--key-id is needed when the key file is not named AuthKey_<KEYID>.p8")
        }
        guard let pem = try? String(contentsOfFile: key, encoding: .utf8) else {
            throw .credentials("cannot read the key file \(key)")
        }
        let signer: ProviderTokenSigner
        do {
            signer = try ProviderTokenSigner(privateKeyPEM: pem, keyID: keyID, teamID: teamID)
        } catch {
            throw .credentials("\(key) is not a P-256 private key in PEM form")
        }
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
        let cache = tokenCache
        let tokens = ProviderTokenManager(
            signer: signer,
            now: { Int64(Date().timeIntervalSince1970) },
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
        do {
            let client = try APNsClient(
                configuration: configuration,
                tokens: tokens,
                logger: logger,
                group: group,
                feedback: feedback
            )
            return (client, tokens)
        } catch {
            throw .credentials("cannot make the APNs client for \(url): \(error)")
        }
    }
}

/// What an FCM sender needs, from whichever options or files named it.
public struct FCMSettings: Sendable {
    public var serviceAccount: String
    public var url: String
    public var caFile: String?
    /// Replaces the file's `token_uri` (the in-process sandbox's port is only known at start).
    public var tokenURI: String? = nil

    public init(serviceAccount: String, url: String, caFile: String?, tokenURI: String? = nil) {
        self.serviceAccount = serviceAccount
        self.url = url
        self.caFile = caFile
        self.tokenURI = tokenURI
    }

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
