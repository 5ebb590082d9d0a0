import SwiftCompilerPlugin
import SwiftDiagnostics
public import SwiftSyntax
import SwiftSyntaxBuilder
public import SwiftSyntaxMacros

/// `@MemberwiseInit` (HeraldMacros): the initializer Swift synthesizes for a struct, at the
/// struct's access level.
public struct MemberwiseInitMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let structure = declaration.as(StructDeclSyntax.self) else {
            throw MacroError("@MemberwiseInit applies to a struct")
        }
        let levels: Set<String> = ["open", "public", "package", "internal", "fileprivate", "private"]
        let access = structure.modifiers.map(\.name.text).first { levels.contains($0) }.map {
            $0 == "open" ? "public" : $0
        }
        var parameters: [String] = []
        var assignments: [String] = []
        for member in structure.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            let modifiers = Set(variable.modifiers.map(\.name.text))
            guard modifiers.isDisjoint(with: ["static", "class", "lazy"]) else { continue }
            let constant = variable.bindingSpecifier.tokenKind == .keyword(.let)
            for binding in variable.bindings {
                guard isStored(binding) else { continue }
                guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text else {
                    throw MacroError("@MemberwiseInit needs one name per stored property")
                }
                // A constant with its value is no parameter (Swift's rule too).
                if constant, binding.initializer != nil { continue }
                guard let type = binding.typeAnnotation?.type else {
                    throw MacroError("@MemberwiseInit needs the type of '\(name)' written out")
                }
                var parameter = "\(name): \(isFunction(type) ? "@escaping " : "")\(type.trimmedDescription)"
                if let initializer = binding.initializer {
                    parameter += " = \(initializer.value.trimmedDescription)"
                } else if !constant, isOptional(type) {
                    parameter += " = nil"
                }
                parameters.append(parameter)
                assignments.append("self.\(name) = \(name)")
            }
        }
        let prefix = access.map { $0 + " " } ?? ""
        let body = assignments.map { "    " + $0 }.joined(separator: "\n")
        return ["\(raw: prefix)init(\(raw: parameters.joined(separator: ", "))) {\n\(raw: body)\n}"]
    }

    /// A binding that holds a value: no accessors, or only observers.
    static func isStored(_ binding: PatternBindingSyntax) -> Bool {
        guard let accessors = binding.accessorBlock?.accessors else { return true }
        guard case .accessors(let list) = accessors else { return false }
        return list.allSatisfy { ["willSet", "didSet"].contains($0.accessorSpecifier.text) }
    }

    static func isOptional(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return true }
        return type.as(IdentifierTypeSyntax.self)?.name.text == "Optional"
    }

    /// A closure type, which a parameter stored away must mark `@escaping`.
    static func isFunction(_ type: TypeSyntax) -> Bool {
        if type.is(FunctionTypeSyntax.self) { return true }
        if let attributed = type.as(AttributedTypeSyntax.self) { return isFunction(attributed.baseType) }
        return false
    }
}

/// Why the macro cannot expand, said at the attribute.
struct MacroError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

@main
struct HeraldMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [MemberwiseInitMacro.self]
}
