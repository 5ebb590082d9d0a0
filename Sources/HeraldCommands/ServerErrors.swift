import ArgumentParser
import HeraldServer

extension HeraldServerError {
    /// Runs `body`; a configuration or start-up refusal becomes the command's error message.
    static func asValidation(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as HeraldServerError {
            throw ValidationError(error.message)
        }
    }
}
