import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The process's own figures, read from `/proc/self` at scrape time and written in Prometheus
/// text under the names every Prometheus client uses (`process_…`), so existing dashboards and
/// alerts work unchanged. Elsewhere than Linux there is no `/proc`: nothing is written.
public enum ProcessMetrics {
    static let entries: [MetricCatalog.Entry] = [
        .init(
            name: "process_resident_memory_bytes",
            kind: .gauge,
            labels: [],
            help: "Resident memory size in bytes."
        ),
        .init(
            name: "process_virtual_memory_bytes",
            kind: .gauge,
            labels: [],
            help: "Virtual memory size in bytes."
        ),
        .init(
            name: "process_cpu_seconds_total",
            kind: .counter,
            labels: [],
            help: "User and system CPU time spent, in seconds."
        ),
        .init(
            name: "process_open_fds",
            kind: .gauge,
            labels: [],
            help: "Open file descriptors (sockets included)."
        ),
        .init(
            name: "process_max_fds",
            kind: .gauge,
            labels: [],
            help: "The most file descriptors the process may open (its soft limit)."
        ),
        .init(
            name: "process_start_time_seconds",
            kind: .gauge,
            labels: [],
            help: "When the process started, in seconds since the Unix epoch."
        ),
    ]

    /// The figures as Prometheus text, each with `# HELP` and `# TYPE`; empty where they cannot
    /// be read.
    public static func text() -> String {
        var out = ""
        for (name, value) in read() {
            guard let entry = entries.first(where: { $0.name == name }) else { continue }
            out += "# HELP \(name) \(entry.help)\n# TYPE \(name) \(entry.kind.rawValue)\n\(name) \(format(value))\n"
        }
        return out
    }

    /// Name and value of every figure that could be read now, in the catalog's order.
    static func read() -> [(String, Double)] {
        #if os(Linux)
        var values: [(String, Double)] = []
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let rss = Double(fields[1]), let size = Double(fields[0]) {
                values.append(("process_resident_memory_bytes", rss * page))
                values.append(("process_virtual_memory_bytes", size * page))
            }
        }
        // The command name (field 2) may hold spaces and parentheses: fields are counted
        // from the last `)`. After it: state is field 3, utime 14, stime 15, starttime 22.
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 19, let user = Double(fields[11]), let system = Double(fields[12]) {
                values.append(("process_cpu_seconds_total", (user + system) / ticks))
                if let started = Double(fields[19]), let boot = bootTime() {
                    values.append(("process_start_time_seconds", boot + started / ticks))
                }
            }
        }
        if let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            // Listing the directory opens one descriptor of its own, gone by now.
            values.append(("process_open_fds", Double(max(descriptors.count - 1, 0))))
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            values.append(("process_max_fds", Double(limit.rlim_cur)))
        }
        let order = entries.map(\.name)
        return values.sorted { order.firstIndex(of: $0.0)! < order.firstIndex(of: $1.0)! }
        #else
        return []
        #endif
    }

    /// The boot time in seconds since the epoch (`btime` in /proc/stat).
    private static func bootTime() -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
