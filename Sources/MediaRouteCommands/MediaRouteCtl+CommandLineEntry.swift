import ArgumentParser

extension MediaRouteCtl {
    /// Parses the process's arguments and runs the command they name; on an error,
    /// prints it and exits with its status. Both the `mediaroutectl` executable and
    /// the installed multi-call binary (run as `mediaroutectl`) start here.
    ///
    /// Parsed and run by hand: ArgumentParser's own `main()` picks its synchronous
    /// entry point when called from a synchronous `main`, which refuses asynchronous
    /// subcommands on Linux.
    public static func runFromCommandLine() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
