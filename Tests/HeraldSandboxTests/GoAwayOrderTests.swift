import HeraldAPNsCore
import HeraldSandbox
import NIOCore
import NIOHTTP2
import Testing

/// A GOAWAY fault must not name as unprocessed a stream the sandbox already acted on: streams
/// complete in the order their DATA arrives, not in id order.
@Suite(.timeLimit(.minutes(2))) struct GoAwayOrderTests {
    @Test func aGoAwayNeverDisownsAStreamAlreadyProcessed() async throws {
        try await SandboxHarness.with { sandbox in
            let token = try #require(try sandbox.device().messagingToken)
            let raw = try await RawHTTP2Client.connect(
                port: sandbox.endpoints.apnsPort,
                caPath: sandbox.endpoints.caCertificatePath
            )
            let headers = RawHTTP2Client.requestHeaders(path: "/3/device/\(token)", token: sandbox.token.text)
            var frames = raw.frames.makeAsyncIterator()
            func answer(on stream: Int) async -> HTTP2Frame.FramePayload? {
                while let frame = await frames.next() {
                    if Int(frame.streamID) == stream, case .headers = frame.payload { return frame.payload }
                    if Int(frame.streamID) == stream, case .rstStream = frame.payload { return frame.payload }
                }
                return nil
            }
            // The first request authenticates the connection and lifts its stream limit.
            try await raw.send(streamID: 1, headers: headers, body: #"{"aps":{}}"#)
            #expect(await answer(on: 1)?.status == "200")

            // Stream 3 opens first but its DATA comes after stream 5 has been answered.
            try await raw.sendHeaders(streamID: 3, headers: headers)
            try await raw.send(streamID: 5, headers: headers, body: #"{"aps":{}}"#)
            #expect(await answer(on: 5)?.status == "200")
            try sandbox.core.inject(SandboxFault(action: .goaway, reason: .shutdown))
            try await raw.sendData(streamID: 3, body: #"{"aps":{}}"#)

            var lastStreamID: HTTP2StreamID?
            var refused = false
            while let frame = await frames.next() {
                switch frame.payload {
                case .goAway(let last, _, _): lastStreamID = last
                case .rstStream(let code) where frame.streamID == 3: refused = code == .refusedStream
                default: break
                }
                if lastStreamID != nil, refused { break }
            }
            // Stream 5 was accepted, so the GOAWAY covers it; stream 3 is refused on its own.
            #expect(lastStreamID == 5)
            #expect(refused)
            let outcomes = sandbox.core.inspection().map(\.outcome)
            #expect(outcomes == ["accepted", "accepted", "goaway"])
            await raw.close()
        }
    }
}
