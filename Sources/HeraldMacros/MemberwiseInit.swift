/// Gives a struct the memberwise initializer Swift would synthesize, with the struct's own access
/// level: one parameter per stored property, in declaration order; a `var` with an initial value
/// defaults to it, an optional `var` without one to `nil`; a `let` with an initial value is not a
/// parameter. A public wire type gets its public initializer without writing it out.
@attached(member, names: named(init))
public macro MemberwiseInit() = #externalMacro(module: "HeraldMacrosPlugin", type: "MemberwiseInitMacro")
