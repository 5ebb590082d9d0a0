import HeraldStore
import Testing

@testable import HeraldRelay

/// `CustomerWait.since`: the customer's oldest message still unanswered by the agent, as the
/// transcript stood before the agent event a push brings.
@Suite("Customer wait")
struct CustomerWaitTests {
    static let typing: Set<String> = ["Notice.TypingStarted"]

    /// Events at positions 1, 2, … at 100, 200, …; `c` the customer's, `a` the agent's, `t` an
    /// agent's typing notice.
    static func transcript(_ authors: String) -> [TranscriptEvent] {
        authors.enumerated().map { index, author in
            TranscriptEvent(
                conversation: "c",
                position: index + 1,
                userID: "u",
                type: author == "t" ? "Notice.TypingStarted" : "Message.Text",
                sealedAuthor: [],
                fromAgent: author != "c",
                sealedText: [],
                at: Int64(index + 1) * 100
            )
        }
    }

    @Test(
        "the first customer message after the last agent message before the answer; none when the agent spoke last",
        arguments: [
            ("acca", 4, Int64?(200)),  // asked twice, answered at 4: since the first question
            ("acta", 4, Int64?(200)),  // a typing notice answers nothing
            ("acaca", 5, Int64?(400)),  // the first question was answered at 3
            ("aca", 3, Int64?(200)),
            ("aa", 2, Int64?.none),  // the agent twice in a row
            ("a", 1, Int64?.none),  // the agent first
            ("ccaca", 3, Int64?(100)),  // later events do not count
        ]
    )
    func since(_ authors: String, answer: Int, expected: Int64?) {
        #expect(CustomerWait.since(in: Self.transcript(authors), before: answer, ignoring: Self.typing) == expected)
    }
}
