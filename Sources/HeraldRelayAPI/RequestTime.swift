import Foundation
public import HeraldEncoding

/// A point in time as a request body gives it: milliseconds since the Unix epoch (a JSON integer,
/// the API's convention) or RFC 3339 text (a JSON string; the callbacks API took only that at
/// first and still takes it, so clients written then keep working). The JSON type tells them
/// apart: a string is never read as a number of milliseconds, nor a number as a year.
public enum RequestTime: Sendable, Hashable, Codable, DescribedJSONValue {
    case milliseconds(Int64)
    case text(String)

    /// The last millisecond RFC 3339 can write (9999-12-31T23:59:59.999Z). Also keeps a time plus
    /// a lifetime far from `Int64`'s end.
    public static let latest: Int64 = 253_402_300_799_999

    public static let jsonDescription = "milliseconds since the epoch (an integer) or an RFC 3339 string"

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let milliseconds = try? container.decode(Int64.self) {
            self = .milliseconds(milliseconds)
        } else if let text = try? container.decode(String.self) {
            self = .text(text)
        } else {
            // A fraction, a boolean, an object: named by the field, as every refused type is.
            throw DecodingError.typeMismatch(
                RequestTime.self,
                .init(codingPath: decoder.codingPath, debugDescription: Self.jsonDescription)
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .milliseconds(let milliseconds): try container.encode(milliseconds)
        case .text(let text): try container.encode(text)
        }
    }

    /// Milliseconds since the epoch; nil for text that is not RFC 3339, or a time before the epoch
    /// or after `latest`.
    public var epochMilliseconds: Int64? {
        let milliseconds: Int64? =
            switch self {
            case .milliseconds(let milliseconds): milliseconds
            case .text(let text): Self.parse(text)
            }
        guard let milliseconds, (0...Self.latest).contains(milliseconds) else { return nil }
        return milliseconds
    }

    /// Milliseconds since the epoch from RFC 3339 text, with or without fractional seconds.
    public static func parse(_ text: String) -> Int64? {
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime],
        ] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        }
        return nil
    }

    /// RFC 3339 in UTC with milliseconds: how the callbacks API's older time fields are written.
    public static func format(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
