/// The apps the relay pushes for; written through `ChangeStore.apply` (`StoreChange.saveApp`).
public protocol AppStore: Sendable {
    /// The app with this id, as last saved, or `nil`.
    func app(id: String) async throws -> AppRecord?
    /// Every app, in id order.
    func apps() async throws -> [AppRecord]
}
