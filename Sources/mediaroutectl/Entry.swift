import ArgumentParser
import MediaRouteCommands

/// Parses and runs by hand: ArgumentParser's own `main()` picks its synchronous
/// entry point here, which refuses asynchronous subcommands on Linux.
@main
struct Entry {
    static func main() async {
        do {
            var command = try MediaRouteCtl.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            MediaRouteCtl.exit(withError: error)
        }
    }
}
