// Benchmarks of HeraldCrypto's envelope: sealing on the relay, opening on the device.
//
// Run from Benchmarks/:  swift package --allow-writing-to-package-directory benchmark
// Figures and the machine they were taken on: docs/performance.md ("Crypto core").
//
// Each benchmark runs on one thread. "Seal" is what the relay does per push and device: encode the
// plaintext, seal it (fresh random nonce) and produce the envelope's text form. "Open" is what the
// device does: parse the text form, authenticate and decrypt, decode the plaintext.

import Benchmark
import HeraldCrypto

/// A message whose plaintext encoding is exactly `encodedLength` bytes (ASCII text).
private func message(encodedLength: Int) -> MessageContent {
    var message = MessageContent(
        messageID: "msg_01J9Z3K8QW5X7Y2V4T6R8P0N3M",
        conversationID: "conv_01J9Z2F7D4B6H8K0M2P4R6T8V0",
        senderID: "agent_support_7",
        senderName: "Ada Lovelace",
        text: "",
        sentAt: 1_767_225_600_000
    )
    let sentence = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. "
    let textLength = encodedLength - message.encodedLength
    precondition(textLength >= 0, "the fixed fields alone exceed \(encodedLength) bytes")
    message.text = String(String(repeating: sentence, count: textLength / sentence.utf8.count + 1).prefix(textLength))
    precondition(message.encodedLength == encodedLength)
    return message
}

let benchmarks: @Sendable () -> Void = {
    // One agreement, as after an activation: the relay seals with its side, the device opens with its.
    let relay = KeyPair.generate()
    let device = KeyPair.generate()
    let relayKeys = try! KeyExchange.relaySessionKeys(relay: relay, device: device.publicKey)
    let deviceKeys = try! KeyExchange.deviceSessionKeys(device: device, relay: relay.publicKey)
    let sealer = EnvelopeSealer(sessionKeys: relayKeys)
    let opener = EnvelopeOpener(sessionKeys: [deviceKeys])
    let deviceID = "dev_01J9Z4A1B2C3D4E5F6G7H8J9K0"

    // One operation takes a few microseconds, so each sample is a batch of 1,000 operations
    // (scaling factor kilo) and every figure is reported per operation: the harness's own cost per
    // sample (about 100 ns and 16 allocations, measured with an empty benchmark) would otherwise be
    // a large part of what is measured. Wall-clock percentiles are thus those of the mean time per
    // operation over a batch. 10 s per benchmark gives about 2,700 samples (batches) at 200 bytes
    // and about 400 at 3,000 bytes.
    let configuration = Benchmark.Configuration(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(10),
        maxIterations: 100_000
    )

    for size in [200, 3000] {
        let m = message(encodedLength: size)
        let context = EnvelopeContext(kind: .message, pushID: m.messageID, deviceID: deviceID)

        // Sanity check outside the measurement: what is sealed opens to the same content.
        let text = try! sealer.seal(.message(m), deviceID: deviceID).text
        precondition(try! opener.openContent(Envelope(text: text), context: context) == .message(m))

        Benchmark("Seal message \(size) B", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try sealer.seal(.message(m), deviceID: deviceID).text)
            }
        }

        Benchmark("Open message \(size) B", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                let envelope = try Envelope(text: text)
                blackHole(try opener.openContent(envelope, context: context))
            }
        }
    }
}
