import Foundation
import HeraldMacros
public import Hummingbird
import NIOCore

/// JSON answers as every Herald HTTP service writes them: `application/json`, keys sorted,
/// slashes unescaped.
public enum JSONResponse {
    /// `value` encoded as the body.
    public static func make(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return text(status, String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// A body already written as JSON.
    public static func text(_ status: HTTPResponse.Status, _ json: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json)))
    }

    /// An error answer: `{"error": kind, "reason": why, "field": field?}`. A 401 also says which
    /// scheme to use (`WWW-Authenticate: Bearer`).
    public static func error(
        _ status: HTTPResponse.Status,
        _ kind: String,
        reason: String,
        field: String? = nil
    ) -> Response {
        // Encoding three strings cannot fail.
        var response =
            (try? make(status, ErrorBody(error: kind, reason: reason, field: field)))
            ?? text(status, #"{"error":"internal"}"#)
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer" }
        return response
    }

    /// The error body as JSON text, as `error(_:_:reason:field:)` writes it (for answers written
    /// below Hummingbird, at the connection level).
    public static func errorJSON(error: String, reason: String, field: String?) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try? encoder.encode(ErrorBody(error: error, reason: reason, field: field))
        return data.map { String(decoding: $0, as: UTF8.self) } ?? #"{"error":"internal"}"#
    }

    /// The error body every Herald HTTP service answers.
    @MemberwiseInit
    public struct ErrorBody: Codable, Sendable, Hashable {
        /// A stable name for the kind of failure (`invalid_field`, `unauthorized`, …).
        public var error: String
        /// What went wrong, for a person. Never holds secrets or message text.
        public var reason: String
        /// The request field at fault, when one is.
        public var field: String?
    }
}
