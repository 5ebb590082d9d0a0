/// The apps the relay pushes for.
public protocol AppStore: Sendable {
    /// Adds or replaces an app (by id).
    func saveApp(_ app: AppRecord) async throws
    /// The app with this id, as last saved, or `nil`.
    func app(id: String) async throws -> AppRecord?
    /// Every app, in id order.
    func apps() async throws -> [AppRecord]
}
