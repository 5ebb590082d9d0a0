public import Metrics
public import Prometheus

/// swift-metrics into a Prometheus registry, with each metric's `# HELP` text from
/// `MetricCatalog`. swift-prometheus's own factory writes no help text (and its registry refuses
/// two help texts for one name), so every Herald process bootstraps this one instead.
public struct HeraldMetricsFactory: MetricsFactory {
    public let registry: PrometheusCollectorRegistry
    /// Histogram buckets of timers: 5 ms to 10 s, swift-prometheus's default.
    public var durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    /// Histogram buckets of aggregating recorders.
    public var valueBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(name: label, labels: dimensions, help: MetricCatalog.help(for: label))
    }

    public func makeFloatingPointCounter(
        label: String,
        dimensions: [(String, String)]
    ) -> any FloatingPointCounterHandler {
        registry.makeCounter(name: label, labels: dimensions, help: MetricCatalog.help(for: label))
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        let help = MetricCatalog.help(for: label)
        guard aggregate else { return registry.makeGauge(name: label, labels: dimensions, help: help) }
        return registry.makeValueHistogram(name: label, labels: dimensions, buckets: valueBuckets, help: help)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(name: label, labels: dimensions, help: MetricCatalog.help(for: label))
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            name: label,
            labels: dimensions,
            buckets: durationBuckets,
            help: MetricCatalog.help(for: label)
        )
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}

/// What `GET /metrics` answers: the registry's series, the build info, and the process's own
/// figures.
public struct MetricsExposition: Sendable {
    public let registry: PrometheusCollectorRegistry

    /// Sets `herald_build_info` in `registry`.
    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        registry.makeGauge(
            name: BuildInfo.metricName,
            labels: [("version", BuildInfo.version), ("swift", BuildInfo.swift)],
            help: MetricCatalog.help(for: BuildInfo.metricName)
        ).set(to: 1.0)
    }

    /// Prometheus text (version 0.0.4).
    public func render() -> [UInt8] {
        var buffer = registry.emitToBuffer()
        buffer.append(contentsOf: Array(ProcessMetrics.text().utf8))
        return buffer
    }
}
