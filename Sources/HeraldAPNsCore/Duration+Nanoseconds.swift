extension Duration {
    /// The duration in whole nanoseconds, for APIs that count in them (NIO's `TimeAmount`,
    /// latency metrics, random backoff ranges).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
