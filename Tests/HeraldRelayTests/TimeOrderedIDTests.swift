import Testing

@testable import HeraldRelay

@Suite("Time-ordered ids", .timeLimit(.minutes(1)))
struct TimeOrderedIDTests {
    @Test("canonical version-7 UUIDs that sort by time and do not repeat")
    func shape() {
        let ids = (0..<2000).map { TimeOrderedID.make(milliseconds: 1_795_000_000_000 + Int64($0 / 10)) }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36)
            #expect([8, 13, 18, 23].allSatisfy { bytes[$0] == UInt8(ascii: "-") })
            #expect(bytes[14] == UInt8(ascii: "7"))
            #expect("89ab".utf8.contains(bytes[19]))
            #expect(id == id.lowercased())
        }
        let prefixes = ids.map { String($0.prefix(13)) }
        #expect(prefixes == prefixes.sorted())
        #expect(TimeOrderedID.make(milliseconds: 0x0123_4567_89ab).hasPrefix("01234567-89ab-7"))
    }
}
