/// Runs `body`, giving up after `deadline`: its value, or nil when the deadline came first (and
/// `body` was cancelled). A guard against a hang, not a wait: it returns as soon as `body` does.
func withDeadline<T: Sendable>(
    _ deadline: Duration,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: deadline)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
}
