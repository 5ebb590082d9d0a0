public import Foundation
public import HeraldPush

/// A push service's answer to a push request as a `PushOutcome`, by the statuses the services
/// document (RFC 8030 §5–§8, Mozilla autopush, FCM's Web Push endpoint, Apple's, WNS).
public enum WebPushAnswer {
    /// The outcome of `status`, with the `Retry-After` header and the body when there were
    /// any; `now` dates a `Retry-After` given as an HTTP date.
    ///
    /// 2xx: delivered (the push service's `Location` is the sender's to add as the receipt).
    /// 404 and 410: the subscription is dead. 413: too large. 429: later, after `Retry-After`.
    /// 5xx: later (after `Retry-After` on 503). Every other status: refused for good, 401 and
    /// 403 as VAPID refusals.
    public static func outcome(status: Int, retryAfter: String?, body: String?, now: Date = Date()) -> PushOutcome {
        let detail = summary(body).map { ": \($0)" } ?? ""
        switch status {
        case 200..<300:
            return .delivered(receipt: nil)
        case 404:
            return .tokenDead(reason: "subscription expired (404)\(detail)", since: nil)
        case 410:
            return .tokenDead(reason: "subscription gone (410)\(detail)", since: nil)
        case 413:
            return .failed(reason: "payload too large (413)\(detail)", status: 413)
        case 401, 403:
            return .failed(reason: "VAPID authorization refused (\(status))\(detail)", status: status)
        case 429:
            return .retryLater(
                reason: "rate limited by the push service (429)",
                after: retryAfter.flatMap { delay(retryAfter: $0, now: now) }
            )
        case 503:
            return .retryLater(
                reason: "push service unavailable (503)",
                after: retryAfter.flatMap { delay(retryAfter: $0, now: now) }
            )
        case 500..<600:
            return .retryLater(reason: "push service error (\(status))")
        default:
            return .failed(reason: "refused by the push service (\(status))\(detail)", status: status)
        }
    }

    /// `Retry-After` (RFC 9110 §10.2.3) as a wait from `now`: delay-seconds or an HTTP date
    /// (IMF-fixdate); nil when it is neither.
    public static func delay(retryAfter value: String, now: Date) -> Duration? {
        let text = String(value.trimmingWhitespace())
        if !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return .seconds(Int64(text) ?? Int64.max)
        }
        // Made per call: a 429 or 503 is rare, and a shared DateFormatter is not Sendable.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: text) else { return nil }
        return .seconds(max(0, Int64(date.timeIntervalSince(now).rounded(.up))))
    }

    /// The first line of a service's error body, short: its words explain a refusal in the
    /// outcome's reason (a body carries no message content: the push service only has
    /// ciphertext).
    static func summary(_ body: String?) -> String? {
        guard let line = body?.split(whereSeparator: \.isNewline).first?.trimmingCharacters(in: .whitespaces),
            !line.isEmpty
        else { return nil }
        return line.count > 160 ? String(line.prefix(160)) + "…" : line
    }
}
