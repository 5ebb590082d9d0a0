import ArgumentParser
import HeraldServer

extension HeraldServerError {
    /// Runs `body`; a configuration or start-up refusal becomes the command's error message.
    static func asValidation<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as HeraldServerError {
            throw ValidationError(error.message)
        }
    }

    /// Runs `body`; a configuration refusal becomes the command's error message.
    static func validating<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as HeraldServerError {
            throw ValidationError(error.message)
        }
    }
}
