import MediaRouteCommands

/// `mediaroutectl` on its own, for development (`swift run mediaroutectl`); what
/// `make install` installs is `mediarouted` run under this name (see there).
@main
struct Entry {
    static func main() async {
        await MediaRouteCtl.runFromCommandLine()
    }
}
