import Foundation
import HeraldRelayAPI
import HummingbirdWSClient
import Logging

/// The SDK session's live channel to the relay (`/v1/devices/{id}/live`, device credential), as
/// seed 004 step 4 has it: after a VoIP push the SDK connects, learns the call and reports it
/// ringing, answers or declines through it, and hears when the call stops elsewhere.
///
/// Frames sent before the connection is up wait in order and go out once it is. The connection
/// runs in the phone's group (`PhoneTasks`) until `close()` or the phone stops.
final class CallChannel: Sendable {
    private let outgoing: AsyncStream<String>.Continuation
    private let task: PhoneTasks.Handle

    /// - Parameter received: called for each frame the relay sends, in order.
    init(
        tasks: PhoneTasks,
        relay: String,
        deviceID: String,
        credential: String,
        logger: Logger,
        received: @escaping @Sendable (LiveServerFrame) async -> Void,
        ended: @escaping @Sendable () -> Void
    ) {
        let url =
            relay.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(
                of: "https://",
                with: "wss://"
            )
            + "/v1/devices/\(deviceID)/live?credential=\(credential)"
        let (frames, outgoing) = AsyncStream.makeStream(of: String.self)
        self.outgoing = outgoing
        task = tasks.start {
            do {
                try await WebSocketClient.connect(url: url, logger: logger) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await message in inbound.messages(maxSize: 1 << 20) {
                                guard case .text(let text) = message, let frame = LiveServerFrame(jsonText: text)
                                else { continue }
                                await received(frame)
                            }
                        }
                        group.addTask {
                            for await text in frames { try await outbound.write(.text(text)) }
                        }
                        try await group.next()
                        group.cancelAll()
                    }
                }
            } catch {
                logger.info("the live channel ended", metadata: ["error": "\(error)"])
            }
            ended()
        }
    }

    func send(_ frame: LiveClientFrame) {
        outgoing.yield(frame.jsonText())
    }

    func close() {
        outgoing.finish()
        task.cancel()
    }
}
