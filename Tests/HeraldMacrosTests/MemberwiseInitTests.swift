import HeraldMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// `@MemberwiseInit` expands to the initializer Swift synthesizes, at the struct's access level.
@Suite("MemberwiseInit")
struct MemberwiseInitTests {
    static let macros = ["MemberwiseInit": MacroSpec(type: MemberwiseInitMacro.self)]

    static func expands(_ source: String, to expected: String, line: UInt = #line) {
        assertMacroExpansion(
            source,
            expandedSource: expected,
            macroSpecs: macros,
            failureHandler: { Issue.record(Comment(rawValue: $0.message)) },
            line: line
        )
    }

    @Test("stored properties in order; a var's initial value and an optional var's nil as defaults")
    func storedProperties() {
        Self.expands(
            """
            @MemberwiseInit
            public struct Push {
                public var id: String
                public let ttl: Int64
                public var badge: Int?
                public var priority: Int = 5
                public let kind = "message"
                public static var count = 0
                public var summary: String { id }
                public var watched: Int = 0 {
                    didSet { print(watched) }
                }
                public var handler: @Sendable () -> Void
            }
            """,
            to: """
                public struct Push {
                    public var id: String
                    public let ttl: Int64
                    public var badge: Int?
                    public var priority: Int = 5
                    public let kind = "message"
                    public static var count = 0
                    public var summary: String { id }
                    public var watched: Int = 0 {
                        didSet { print(watched) }
                    }
                    public var handler: @Sendable () -> Void

                    public init(id: String, ttl: Int64, badge: Int? = nil, priority: Int = 5, watched: Int = 0, handler: @escaping @Sendable () -> Void) {
                        self.id = id
                        self.ttl = ttl
                        self.badge = badge
                        self.priority = priority
                        self.watched = watched
                        self.handler = handler
                    }
                }
                """
        )
    }

    @Test("the struct's access level: package, and internal when it names none")
    func accessLevel() {
        Self.expands(
            """
            @MemberwiseInit
            package struct Row {
                package var id: String
            }
            """,
            to: """
                package struct Row {
                    package var id: String

                    package init(id: String) {
                        self.id = id
                    }
                }
                """
        )
        Self.expands(
            """
            @MemberwiseInit
            struct Row {
                let id: String
            }
            """,
            to: """
                struct Row {
                    let id: String

                    init(id: String) {
                        self.id = id
                    }
                }
                """
        )
    }

    @Test("a class, or a property without its type written, is refused at the attribute")
    func refusals() {
        assertMacroExpansion(
            """
            @MemberwiseInit
            final class Box {
                var id = "x"
            }
            """,
            expandedSource: """
                final class Box {
                    var id = "x"
                }
                """,
            diagnostics: [DiagnosticSpec(message: "@MemberwiseInit applies to a struct", line: 1, column: 1)],
            macroSpecs: Self.macros,
            failureHandler: { Issue.record(Comment(rawValue: $0.message)) }
        )
        assertMacroExpansion(
            """
            @MemberwiseInit
            struct Box {
                var id = "x"
            }
            """,
            expandedSource: """
                struct Box {
                    var id = "x"
                }
                """,
            diagnostics: [
                DiagnosticSpec(message: "@MemberwiseInit needs the type of 'id' written out", line: 1, column: 1)
            ],
            macroSpecs: Self.macros,
            failureHandler: { Issue.record(Comment(rawValue: $0.message)) }
        )
    }
}
