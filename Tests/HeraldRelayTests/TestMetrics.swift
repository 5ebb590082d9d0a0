import HeraldObservability
import Metrics
import Prometheus

/// The test process's metrics backend. swift-metrics bootstraps once per process and its
/// registry would be shared by every test, so a value found there could have been caused by any
/// earlier test. Instead, a metric made inside `isolated` (by its task or any child task: the
/// relay, dispatcher and clients a harness starts, the HTTP handlers they spawn) lands in that
/// call's own registry; one made anywhere else lands in `shared`.
enum TestMetrics {
    /// Where metrics made outside `isolated` go.
    static let shared = PrometheusCollectorRegistry()

    @TaskLocal private static var current: PrometheusCollectorRegistry?

    private static let bootstrapped: Void = MetricsSystem.bootstrap(RoutingMetricsFactory())

    /// Runs `body` with a fresh registry that receives every metric made meanwhile by its task
    /// tree.
    static func isolated<T>(_ body: (PrometheusCollectorRegistry) async throws -> T) async rethrows -> T {
        _ = bootstrapped
        let registry = PrometheusCollectorRegistry()
        return try await $current.withValue(registry) { try await body(registry) }
    }

    /// The value of one series (`name` or `name{label="value"}`, as Prometheus writes it) in
    /// Prometheus text; 0 when it has not been written yet.
    static func value(_ series: String, in text: String) -> Double {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), line[..<space] == series else { continue }
            return Double(line[line.index(after: space)...]) ?? .nan
        }
        return 0
    }

    /// The registry a metric made here goes to.
    fileprivate static var registry: PrometheusCollectorRegistry { current ?? shared }
}

/// Makes each metric in the registry of the task that makes it (see `TestMetrics`), with the
/// help texts the servers write.
private struct RoutingMetricsFactory: MetricsFactory {
    private var factory: HeraldMetricsFactory { HeraldMetricsFactory(registry: TestMetrics.registry) }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        factory.makeCounter(label: label, dimensions: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        factory.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        factory.makeMeter(label: label, dimensions: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        factory.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        factory.makeTimer(label: label, dimensions: dimensions)
    }

    // A test's metrics live as long as its registry: nothing is unregistered (the registry a
    // handler belongs to is not known here).
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
