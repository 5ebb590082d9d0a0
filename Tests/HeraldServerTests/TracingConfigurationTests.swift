import Foundation
import HeraldServer
import Testing

/// The `tracing` section (docs/tracing.md): off by default, resolved once with the rest of the
/// configuration (environment over file), every bad value refused with the setting's name.
@Suite(.timeLimit(.minutes(1)))
struct TracingConfigurationTests {
    static func resolve(_ json: String, environment: [String: String] = [:]) throws -> HeraldConfiguration {
        let path = try ConfigurationTests.file(json)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try HeraldConfiguration(
            layers: [try ConfigurationFile.environment(environment), try ConfigurationFile.load(path: path)]
        )
    }

    @Test("off by default; the file's section with its defaults; the environment over the file")
    func layers() throws {
        #expect(HeraldConfiguration().tracing == nil)
        #expect(try Self.resolve("{}").tracing == nil)
        let file = #"{"tracing": {"endpoint": "http://collector:4318/v1/traces"}}"#
        let fromFile = try #require(try Self.resolve(file).tracing)
        #expect(fromFile.endpoint == "http://collector:4318/v1/traces")
        #expect(fromFile.serviceName == "herald")
        #expect(fromFile.samplingRatio == 1)
        let layered = try #require(
            try Self.resolve(
                file,
                environment: [
                    "HERALD_TRACING_ENDPOINT": "https://otel.example/v1/traces",
                    "HERALD_TRACING_SERVICE_NAME": "herald-eu", "HERALD_TRACING_SAMPLING_RATIO": "0.25",
                ]
            ).tracing
        )
        #expect(layered.endpoint == "https://otel.example/v1/traces")
        #expect(layered.serviceName == "herald-eu")
        #expect(layered.samplingRatio == 0.25)
    }

    @Test(
        "bad values are refused with the setting's name",
        arguments: [
            (
                #"{"tracing": {"service_name": "herald"}}"#,
                "tracing: the endpoint is missing (http://collector:4318/v1/traces)"
            ),
            (
                #"{"tracing": {"endpoint": "collector:4318"}}"#,
                "tracing.endpoint must be an http:// or https:// URL (got 'collector:4318')"
            ),
            (
                #"{"tracing": {"endpoint": "ftp://c/v1/traces"}}"#,
                "tracing.endpoint must be an http:// or https:// URL (got 'ftp://c/v1/traces')"
            ),
            (
                #"{"tracing": {"endpoint": "http://c:4318", "sampling_ratio": 1.5}}"#,
                "tracing.sampling_ratio must be between 0 and 1 (got 1.5)"
            ),
            (
                #"{"tracing": {"endpoint": "http://c:4318", "sampling_ratio": -0.1}}"#,
                "tracing.sampling_ratio must be between 0 and 1 (got -0.1)"
            ),
            (
                #"{"tracing": {"endpoint": "http://c:4318", "service_name": ""}}"#,
                "tracing.service_name must not be empty"
            ),
        ]
    )
    func refused(json: String, message: String) throws {
        #expect(throws: HeraldServerError.configuration(message)) { try Self.resolve(json) }
    }

    @Test("an environment ratio that is not a number is refused with the variable's name")
    func environmentRatio() {
        #expect(
            throws: HeraldServerError.configuration("HERALD_TRACING_SAMPLING_RATIO must be a number (got 'half')")
        ) {
            try ConfigurationFile.environment(["HERALD_TRACING_SAMPLING_RATIO": "half"])
        }
    }

    @Test("a key the tracing section does not have is refused with its path")
    func unknownKey() throws {
        let path = try ConfigurationTests.file(#"{"tracing": {"endpoint": "http://c:4318", "ratio": 0.5}}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: HeraldServerError.configuration("\(path): unknown key 'tracing.ratio'")) {
            try ConfigurationFile.load(path: path)
        }
    }
}
