import HeraldCommands

/// The `herald` executable: every subcommand lives in HeraldCommands so tests can run them.
@main
struct HeraldMain {
    static func main() async {
        await HeraldCommand.runMain()
    }
}
