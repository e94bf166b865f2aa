import ArgumentParser

struct Floor: ParsableCommand {
    @Option(help: "A name to print.") var name = "MediaRoute"
    @Flag(help: "Print nothing.") var quiet = false

    func run() throws {
        if !quiet { print(name) }
    }
}

Floor.main()
