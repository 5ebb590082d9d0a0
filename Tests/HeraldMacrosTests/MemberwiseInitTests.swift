import HeraldMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// `@MemberwiseInit` expands to the initializer Swift synthesizes, at the struct's access level.
@Suite("MemberwiseInit")
struct MemberwiseInitTests {
    static let macros = ["MemberwiseInit": MacroSpec(type: MemberwiseInitMacro.self)]

    /// `declaration { members }` under the attribute expands to the same with `generated` (the
    /// initializer, as written at the struct's indentation) after its members; `refusal`, when
    /// given, is the one diagnostic expected instead.
    static func expands(
        _ declaration: String,
        _ members: [String],
        to generated: [String] = [],
        refusal: String? = nil,
        line: UInt = #line
    ) {
        let body = members.map { "    " + $0 }.joined(separator: "\n")
        let added = generated.isEmpty ? "" : "\n\n" + generated.map { "    " + $0 }.joined(separator: "\n")
        assertMacroExpansion(
            "@MemberwiseInit\n\(declaration) {\n\(body)\n}",
            expandedSource: "\(declaration) {\n\(body)\(added)\n}",
            diagnostics: refusal.map { [DiagnosticSpec(message: $0, line: 1, column: 1)] } ?? [],
            macroSpecs: macros,
            failureHandler: { Issue.record(Comment(rawValue: $0.message)) },
            line: line
        )
    }

    @Test("stored properties in order; a var's initial value and an optional var's nil as defaults")
    func storedProperties() {
        Self.expands(
            "public struct Push",
            [
                "public var id: String",
                "public let ttl: Int64",
                "public var badge: Int?",
                "public var priority: Int = 5",
                "public let kind = \"message\"",
                "public static var count = 0",
                "public var summary: String { id }",
                "public var watched: Int = 0 {",
                "    didSet { print(watched) }",
                "}",
                "public var handler: @Sendable () -> Void",
            ],
            to: [
                "public init(id: String, ttl: Int64, badge: Int? = nil, priority: Int = 5, watched: Int = 0, "
                    + "handler: @escaping @Sendable () -> Void) {",
                "    self.id = id",
                "    self.ttl = ttl",
                "    self.badge = badge",
                "    self.priority = priority",
                "    self.watched = watched",
                "    self.handler = handler",
                "}",
            ]
        )
    }

    @Test(
        "the struct's access level: package, and internal when it names none",
        arguments: [("package struct Row", "package "), ("struct Row", "")]
    )
    func accessLevel(declaration: String, access: String) {
        Self.expands(
            declaration,
            ["\(access)var id: String"],
            to: ["\(access)init(id: String) {", "    self.id = id", "}"]
        )
    }

    @Test("a class, or a property without its type written, is refused at the attribute")
    func refusals() {
        Self.expands("final class Box", ["var id = \"x\""], refusal: "@MemberwiseInit applies to a struct")
        Self.expands("struct Box", ["var id = \"x\""], refusal: "@MemberwiseInit needs the type of 'id' written out")
    }
}
