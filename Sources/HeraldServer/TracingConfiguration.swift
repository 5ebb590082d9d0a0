import Foundation
public import HeraldTracing
public import Logging
import OTel
public import ServiceLifecycle

extension ConfigurationFile {
    /// The `tracing` section: where spans go (docs/tracing.md).
    public struct Tracing: Codable, Sendable, Equatable {
        public init() {}

        // The file's names, in snake case.
        enum CodingKeys: String, CodingKey {
            case endpoint
            case serviceName = "service_name"
            case samplingRatio = "sampling_ratio"
        }

        /// The OTLP/HTTP traces endpoint (`http://collector:4318/v1/traces`); tracing is off
        /// without one.
        public var endpoint: String?
        /// The `service.name` of every span (`herald`).
        public var serviceName: String?
        /// The share of traces the relay starts that are kept, 0 to 1 (1); a trace the backend
        /// started follows the backend's sampling decision.
        public var samplingRatio: Double?
    }
}

/// One trace per push, exported over OTLP/HTTP (protobuf) by swift-otel: resolved once with the
/// rest of `HeraldConfiguration`, from the file's `tracing` section and the
/// `HERALD_TRACING_*` variables. Off by default (docs/tracing.md).
public struct TracingConfiguration: Sendable, Hashable {
    /// The OTLP/HTTP traces endpoint, used as given (`http://collector:4318/v1/traces`).
    public var endpoint: String
    /// The `service.name` resource attribute.
    public var serviceName = "herald"
    /// The share of root traces kept (parent-based: a backend's sampled flag decides for its own).
    public var samplingRatio = 1.0
    /// How long finished spans wait to be exported together (swift-otel's batch processor).
    public var exportDelay: Duration = .seconds(5)

    public init(endpoint: String) {
        self.endpoint = endpoint
    }

    /// The section's settings checked; nil when it names no endpoint (tracing off).
    init?(_ section: ConfigurationFile.Tracing?) throws(HeraldServerError) {
        guard let section else { return nil }
        guard let endpoint = section.endpoint else {
            if section != ConfigurationFile.Tracing() {
                throw .configuration("tracing: the endpoint is missing (http://collector:4318/v1/traces)")
            }
            return nil
        }
        guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw .configuration("tracing.endpoint must be an http:// or https:// URL (got '\(endpoint)')")
        }
        self.init(endpoint: endpoint)
        if let name = section.serviceName {
            guard !name.isEmpty else { throw .configuration("tracing.service_name must not be empty") }
            serviceName = name
        }
        if let ratio = section.samplingRatio {
            guard (0...1).contains(ratio) else {
                throw .configuration("tracing.sampling_ratio must be between 0 and 1 (got \(ratio))")
            }
            samplingRatio = ratio
        }
    }

    /// What the banner says: where spans go (without any credentials in the URL), as whom, and
    /// the share kept.
    public var description: String {
        var url = URLComponents(string: endpoint)
        url?.user = nil
        url?.password = nil
        let shown = url?.string ?? endpoint
        return "OTLP/HTTP \(shown)   (service \(serviceName), sampling \(samplingRatio))"
    }

    /// The tracer every part makes its spans with, and the exporter's service (its batch
    /// processor and OTLP/HTTP client), to run in the service group: it exports what is left
    /// when the group shuts down. Only OTel's traces are on: metrics stay with Prometheus and
    /// logs with swift-log. OTel's own `OTEL_*` variables still apply over these settings.
    public func makeBackend(logger: Logger) throws(HeraldServerError) -> (tracing: PushTracing, service: any Service) {
        var otel = OTel.Configuration.default
        otel.serviceName = serviceName
        otel.diagnosticLogger = .custom(logger)
        otel.logs.enabled = false
        otel.metrics.enabled = false
        otel.traces.exporter = .otlp
        otel.traces.otlpExporter.endpoint = endpoint
        otel.traces.otlpExporter.protocol = .httpProtobuf
        otel.traces.batchSpanProcessor.scheduleDelay = exportDelay
        guard let sampler = type(of: otel.traces.sampler).parentBasedTraceIDRatio(ratio: samplingRatio) else {
            throw .configuration("tracing.sampling_ratio must be between 0 and 1 (got \(samplingRatio))")
        }
        otel.traces.sampler = sampler
        do {
            let backend = try OTel.makeTracingBackend(configuration: otel)
            return (PushTracing(tracer: backend.factory), backend.service)
        } catch {
            throw .configuration("tracing: \(error)")
        }
    }
}
