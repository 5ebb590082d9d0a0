import Foundation
import HeraldHTTPSupport
import HeraldRelay
import HeraldRelayAPI
import HeraldStore
import Hummingbird

/// The operator's lists, behind the API key: `GET /v1/users/{id}/devices` and `GET /v1/pushes`.
enum ListRoutes {
    static func add(to v1: RouterGroup<RelayRequestContext>, relay: Relay, api: API) {
        let reading = api.routes(v1, .backend(.read))
        reading.get("users/:id/devices") { request, context -> Response in
            let caller = try context.caller
            _ = try PushListQuery.parameters(PushListQuery.pairs(request), allowed: [])
            let id = try context.parameters.require("id")
            var view = try await relay.activation.devices(userID: id)
            view.devices.removeAll { !caller.permits(app: $0.app) }
            return try JSONResponse.make(.ok, view)
        }
        reading.get("pushes") { request, context -> Response in
            let caller = try context.caller
            let listing = try PushListQuery.request(PushListQuery.pairs(request))
            if caller.appID != nil {
                // The listing knows devices, not apps: an app key lists one of its devices.
                guard let device = listing.device else {
                    throw RelayError.forbidden.with(
                        detail:
                            "an app's API key lists the pushes of one of its devices (?device=); every push needs an admin key"
                    )
                }
                try API.visible(caller, app: try await relay.activation.deviceApp(id: device) ?? "")
            }
            return try JSONResponse.make(.ok, try await relay.ingest.pushes(listing))
        }
    }
}

/// `GET /v1/pushes`'s query string into a `PushListRequest`: the parameters' shapes (a known
/// state, a number, a time); the relay checks their values. A parameter the endpoint does not
/// know, or one given twice, is refused rather than ignored: `?users=alice` listing every push
/// would answer the wrong question without a word.
enum PushListQuery {
    static let names: Set<String> = ["user", "device", "state", "since", "cursor", "limit"]

    /// The request's query parameters in order, values percent-decoded.
    static func pairs(_ request: Request) -> [(name: String, value: String)] {
        request.uri.queryParameters.map { (name: String($0.key), value: String($0.value)) }
    }

    static func request(_ query: [(name: String, value: String)]) throws(RelayError) -> PushListRequest {
        let values = try parameters(query, allowed: names)
        var request = PushListRequest(user: values["user"], device: values["device"], cursor: values["cursor"])
        if let state = values["state"] {
            guard let known = PushState(rawValue: state) else {
                let states = PushState.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidField("state", "must be one of \(states)")
            }
            request.state = known
        }
        if let since = values["since"] {
            guard let time = time(since) else {
                throw .invalidField(
                    "since",
                    "must be a time: milliseconds since the epoch or RFC 3339 (2026-11-25T10:00:00Z)"
                )
            }
            request.since = time
        }
        if let limit = values["limit"] {
            guard let number = Int(limit) else { throw .invalidField("limit", "must be an integer") }
            request.limit = number
        }
        return request
    }

    /// The query's parameters by name, each given once and among `allowed`.
    static func parameters(
        _ query: [(name: String, value: String)],
        allowed: Set<String>
    ) throws(RelayError) -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in query {
            // A bare `?` or a stray `&`: nothing asked.
            if name.isEmpty, value.isEmpty { continue }
            guard allowed.contains(name) else {
                let known = allowed.isEmpty ? "none" : allowed.sorted().joined(separator: ", ")
                throw .invalidField(name, "is not a parameter of this endpoint (known: \(known))")
            }
            guard values[name] == nil else { throw .invalidField(name, "is given twice") }
            values[name] = value
        }
        return values
    }

    /// Milliseconds since the epoch, from a number of them or an RFC 3339 time (with or without
    /// fractional seconds).
    static func time(_ text: String) -> Int64? {
        // A query has no JSON types: digits only are milliseconds, anything else is RFC 3339.
        if let milliseconds = Int64(text) { return milliseconds }
        return RequestTime.parse(text)
    }
}
