import AsyncHTTPClient
import Foundation
import HeraldDomain
import HeraldFCMCore
import Logging
import Metrics
import NIOCore

/// The OAuth2 access token every send uses: fetched with a signed assertion, shared by all
/// sends, replaced shortly before it expires or once after FCM answers UNAUTHENTICATED.
///
/// An actor because every concurrent send reads it; one refresh runs at a time and the others
/// wait for it rather than each posting its own assertion.
actor FCMAccessTokens {
    private struct Current {
        var token: String
        var refreshAt: ContinuousClock.Instant
    }

    private let signer: FCMAssertionSigner
    private let http: HTTPClient
    private let margin: Duration
    private let timeout: Duration
    private let logger: Logger
    /// What the assertion's `iat` says.
    private let clock: any HeraldClock
    private var current: Current?
    private var refreshing: Task<Current, any Error>?
    private let refreshes = Counter(label: "herald_fcm_token_refreshes_total")

    init(
        signer: FCMAssertionSigner,
        http: HTTPClient,
        margin: Duration,
        timeout: Duration,
        clock: any HeraldClock,
        logger: Logger
    ) {
        self.clock = clock
        self.signer = signer
        self.http = http
        self.margin = margin
        self.timeout = timeout
        self.logger = logger
    }

    /// A valid access token, from the cache when it has time left.
    func token() async throws -> String {
        if let current, ContinuousClock.now < current.refreshAt { return current.token }
        return try await refresh().token
    }

    /// Forgets `token` after FCM refused it, unless a newer one already replaced it.
    func invalidate(_ token: String) {
        if current?.token == token { current = nil }
    }

    private func refresh() async throws -> Current {
        if let refreshing { return try await refreshing.value }
        let task = Task { try await self.fetch() }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        current = fresh
        return fresh
    }

    private func fetch() async throws -> Current {
        refreshes.increment()
        let assertion = try signer.assertion(issuedAt: clock.seconds())
        var request = HTTPClientRequest(url: signer.account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form =
            "grant_type=" + Self.formEncode(FCMServiceAccount.jwtBearerGrantType) + "&assertion="
            + Self.formEncode(assertion)
        request.body = .bytes(ByteBuffer(string: form))
        let started = ContinuousClock.now
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await http.execute(request, timeout: TimeAmount(timeout))
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw FCMClientError.classify(error, otherwise: FCMClientError.tokenEndpoint)
        }
        let data = Data(body.readableBytesView)
        guard response.status == .ok else {
            let refusal = try? JSONDecoder().decode(FCMOAuthErrorBody.self, from: data)
            let detail = refusal.map { "\($0.error): \($0.errorDescription ?? "")" } ?? "HTTP \(response.status.code)"
            // 4xx is the account or the clock; 5xx and the rest may pass.
            if (400..<500).contains(response.status.code) { throw FCMClientError.tokenRefused(detail) }
            throw FCMClientError.tokenEndpoint(detail)
        }
        guard let answer = try? JSONDecoder().decode(FCMAccessTokenResponse.self, from: data),
            !answer.accessToken.isEmpty, answer.expiresIn > 0
        else { throw FCMClientError.tokenEndpoint("the token endpoint's answer has no access token") }
        let lifetime = Duration.seconds(answer.expiresIn)
        let early = min(margin, lifetime / 2)
        logger.debug("FCM access token refreshed", metadata: ["expires_in": "\(answer.expiresIn)"])
        return Current(token: answer.accessToken, refreshAt: started + lifetime - early)
    }

    /// `application/x-www-form-urlencoded`: RFC 3986's unreserved ASCII characters stay, the rest
    /// is percent-encoded (`CharacterSet.alphanumerics` would also keep non-ASCII letters).
    static func formEncode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
    )
}
