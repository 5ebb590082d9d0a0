import HeraldAdapters
import HeraldHTTPSupport
import HeraldObservability
import HeraldRelay
import HeraldRelayAPI
import Hummingbird
import Metrics
import NIOCore

/// `POST /v1/adapters/{name}`: a contact-center event in, a message to the relay (or a reason
/// it is ignored) out.
struct AdapterWebhooks: Sendable {
    let adapters: [String: any ContactCenterAdapter]
    let relay: Relay
    let api: API

    init(adapters: [any ContactCenterAdapter], relay: Relay, api: API) {
        self.adapters = Dictionary(adapters.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.relay = relay
        self.api = api
    }

    func handle(_ request: Request, name: String) async throws -> Response {
        guard let adapter = adapters[name] else {
            throw RelayError.notFound.with(detail: "no adapter '\(name)' is configured")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: api.configuration.maximumBodyBytes)
        } catch {
            throw RelayError.invalidField("body", "is larger than \(api.configuration.maximumBodyBytes) bytes").tooLarge
        }
        let body = Array(buffer.readableBytesView)
        guard
            adapter.authentication.verify(
                authorization: request.headers[.authorization],
                signature: request.headers.first { $0.name.canonicalName == "x-herald-signature" }?.value,
                body: body
            )
        else {
            count(name, "unauthorized")
            throw RelayError.unauthorized.with(detail: "the webhook's secret or signature is not valid")
        }
        let decision: AdapterDecision
        do {
            decision = try adapter.decide(body)
        } catch {
            count(name, "invalid")
            throw RelayError.invalidField(error.field, error.detail)
        }
        switch decision {
        case .ignored(let reason):
            count(name, "ignored")
            Counter(label: "herald_adapter_events_ignored_total", dimensions: [("source", name)]).increment()
            return try JSONResponse.make(.ok, ["ignored": reason])
        case .message(let message):
            var receipt = try await relay.ingest.send(message: message)
            // The platform knows its customer, not the user Herald mapped it to.
            receipt.user = message.to
            AccessLog.current?.name(receipt, as: "message")
            count(name, "pushed")
            return JSONResponse.text(.accepted, receipt.jsonText)
        }
    }

    private func count(_ source: String, _ outcome: String) {
        Counter(label: "herald_adapter_events_total", dimensions: [("source", source), ("outcome", outcome)])
            .increment()
    }
}
