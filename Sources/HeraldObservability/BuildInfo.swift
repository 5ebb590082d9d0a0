/// What build is running: `herald_build_info{version, swift} 1`, and `herald --version`.
public enum BuildInfo {
    /// Herald's version.
    public static let version = "0.1.0"

    /// The Swift compiler the binary was built with (major.minor).
    public static let swift: String = {
        #if compiler(>=6.4)
        return "6.4+"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }()

    static let metricName = "herald_build_info"
}
