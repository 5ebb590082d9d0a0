public import AsyncHTTPClient
import Foundation
import NIOCore
public import NIOHTTP1

/// A browser's part of the console's HTTP, for tests: it keeps cookies, follows nothing, and
/// reads the form tokens out of pages.
public final class ConsoleClient: @unchecked Sendable {
    public struct Page {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: String

        public var location: String? { headers.first(name: "location") }
        /// The value of the first `name="csrf"` field.
        public var csrf: String? { Self.field("csrf", in: body) }

        public static func field(_ name: String, in html: String) -> String? {
            guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
            let rest = html[range.upperBound...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }
    }

    public let base: String
    public let http: HTTPClient
    /// name → value; a Max-Age=0 cookie removes its name.
    public private(set) var cookies: [String: String] = [:]
    /// Headers every request carries (a cross-site page's `origin`, say).
    public var extraHeaders: [(String, String)] = []

    public init(base: String, http: HTTPClient) {
        self.base = base
        self.http = http
    }

    public func get(_ path: String) async throws -> Page {
        try await send(HTTPClientRequest(url: base + path))
    }

    public func post(_ path: String, form: [(String, String)]) async throws -> Page {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let body = form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        request.body = .bytes(ByteBuffer(string: body))
        return try await send(request)
    }

    /// Signs in as `name`; answers the POST's page (a 303 when it worked).
    public func signIn(_ name: String, _ password: String) async throws -> Page {
        let form = try await get("/console/sign-in")
        return try await post(
            "/console/sign-in",
            form: [("name", name), ("password", password), ("csrf", form.csrf ?? ""), ("next", "/console/overview")]
        )
    }

    private func send(_ request: HTTPClientRequest) async throws -> Page {
        var request = request
        if !cookies.isEmpty {
            request.headers.add(name: "cookie", value: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
        }
        for (name, value) in extraHeaders { request.headers.add(name: name, value: value) }
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 8 * 1024 * 1024)
        for header in response.headers[canonicalForm: "set-cookie"] {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
            let name = String(pair[0])
            let value = pair.count > 1 ? String(pair[1]) : ""
            if header.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
        }
        return Page(status: Int(response.status.code), headers: response.headers, body: String(buffer: body))
    }

    public func setCookie(_ name: String, _ value: String) { cookies[name] = value }

    public static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Takes `saved` as its own cookies (a replayed or shared cookie).
    public func restore(_ saved: [String: String]) {
        for (name, value) in saved { setCookie(name, value) }
    }
}
