import ArgumentParser
import HeraldServer

/// The HTTP listener's limits, shared by `herald serve`, `herald relay` and `herald provider`.
/// Each is taken from the command line, else from its environment variable, else from the
/// file's `http` section (serve and relay), else from its default.
struct HTTPOptions: ParsableArguments {
    @Option(
        name: .customLong("http-header-read-timeout"),
        help:
            "Seconds a request head may take to arrive; a slower one gets 408 and is closed. (HERALD_HTTP_HEADER_READ_TIMEOUT; default 10)"
    )
    var headerReadTimeout: Int?

    @Option(
        name: .customLong("http-idle-timeout"),
        help:
            "Seconds a connection may sit without a request before it is closed. (HERALD_HTTP_IDLE_TIMEOUT; default 60)"
    )
    var idleTimeout: Int?

    @Option(
        name: .customLong("http-max-connections"),
        help:
            "Connections open at once; one more gets 503 and is closed. (HERALD_HTTP_MAX_CONNECTIONS; default 512)"
    )
    var maxConnections: Int?

    /// What these flags set, as a configuration section (nil where none was given).
    var layer: ConfigurationFile.HTTP? {
        var http = ConfigurationFile.HTTP()
        http.headerReadTimeout = headerReadTimeout
        http.idleTimeout = idleTimeout
        http.maxConnections = maxConnections
        return http == ConfigurationFile.HTTP() ? nil : http
    }
}
