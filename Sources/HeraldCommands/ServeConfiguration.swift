import ArgumentParser
import Foundation
import HeraldStore

/// The JSON file `herald serve --config` and `herald relay --config` read. Every field is
/// optional; command-line options win over environment variables, which win over the file.
///
/// ```json
/// {
///   "host": "127.0.0.1", "port": 8080, "data": "data", "keys_dir": "keys",
///   "apps": [{"id": "com.example.chat", "team_id": "ABCDE12345", "content_policy": "full",
///             "alert_title": "New message", "alert_body": "Open to read", "message_ttl": 86400, "call_ttl": 30}],
///   "apns": {"key": "keys/AuthKey_X.p8", "key_id": "X", "team_id": "T", "environment": "production",
///            "url": null, "ca": null, "connections": 2},
///   "provider": {"url": "http://127.0.0.1:2199", "secret_file": "keys/provider.secret"},
///   "dispatcher": {"workers": 4, "batch_size": 256},
///   "presence_ttl": 60, "message_retention": 604800, "durable": true
/// }
/// ```
struct ServeConfigurationFile: Codable, Sendable {
    struct APNs: Codable, Sendable {
        var key: String?
        var keyID: String?
        var teamID: String?
        var environment: String?
        var url: String?
        var ca: String?
        var connections: Int?

        enum CodingKeys: String, CodingKey {
            case key
            case keyID = "key_id"
            case teamID = "team_id"
            case environment, url, ca, connections
        }
    }

    struct Provider: Codable, Sendable {
        var url: String?
        var secretFile: String?

        enum CodingKeys: String, CodingKey {
            case url
            case secretFile = "secret_file"
        }
    }

    struct Dispatcher: Codable, Sendable {
        var workers: Int?
        var batchSize: Int?

        enum CodingKeys: String, CodingKey {
            case workers
            case batchSize = "batch_size"
        }
    }

    /// One contact-center webhook.
    struct Adapter: Codable, Sendable {
        /// The shared secret (or HMAC key); HERALD_<NAME>_SECRET wins over it.
        var secret: String?
        /// `hmac` (x-herald-signature: sha256=…, the default) or `bearer`.
        var authentication: String?
        /// The platform's customer id → Herald user id; others map to `customer_prefix` + id.
        var customers: [String: String]?
        var customerPrefix: String?

        enum CodingKeys: String, CodingKey {
            case secret, authentication, customers
            case customerPrefix = "customer_prefix"
        }
    }

    /// The FCM sender (Android pushes).
    struct FCM: Codable, Sendable {
        /// A Google service-account JSON file.
        var serviceAccount: String?
        var url: String?
        var ca: String?

        enum CodingKeys: String, CodingKey {
            case serviceAccount = "service_account"
            case url, ca
        }
    }

    /// Chat background semantics.
    struct Chat: Codable, Sendable {
        /// Seconds before the first push after a chat disconnect; 0 pushes at once.
        var firstPushDelay: Int?
        /// Transcript event types that never push.
        var filteredTypes: [String]?

        enum CodingKeys: String, CodingKey {
            case firstPushDelay = "first_push_delay"
            case filteredTypes = "filtered_types"
        }
    }

    var host: String?
    var port: Int?
    var data: String?
    var keysDir: String?
    var apps: [AppRecord]?
    var apns: APNs?
    var fcm: FCM?
    var provider: Provider?
    var dispatcher: Dispatcher?
    var presenceTTL: Int?
    var messageRetention: Int64?
    var durable: Bool?
    var adapters: [String: Adapter]?
    var chat: Chat?

    enum CodingKeys: String, CodingKey {
        case host, port, data
        case keysDir = "keys_dir"
        case apps, apns, fcm, provider, dispatcher
        case presenceTTL = "presence_ttl"
        case messageRetention = "message_retention"
        case durable, adapters, chat
    }

    static func load(path: String?) throws -> ServeConfigurationFile {
        guard let path else { return ServeConfigurationFile() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the configuration file \(path)")
        }
        do {
            return try JSONDecoder().decode(ServeConfigurationFile.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            let field = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            throw ValidationError("\(path): '\(field)' is missing")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw ValidationError(
                "\(path): '\(context.codingPath.map(\.stringValue).joined(separator: "."))' has the wrong type"
            )
        } catch let DecodingError.dataCorrupted(context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw ValidationError(field.isEmpty ? "\(path) is not valid JSON" : "\(path): '\(field)' is not valid")
        }
    }
}

/// Environment variables the relay commands read.
enum ServeEnvironment {
    static var values: [String: String] { ProcessInfo.processInfo.environment }

    static func string(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    static func int(_ name: String) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name) must be a whole number (got '\(text)')") }
        return value
    }
}
