public import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import SystemRouting

extension MediaRouteCtl {
    /// An interactive picker: arrow keys or a number, Enter to activate.
    public struct Pick: AsyncParsableCommand {
        public static let configuration = CommandConfiguration(
            abstract: "Pick a device interactively (arrow keys or its number, Enter), then activate it.")

        @OptionGroup public var common: CommonOptions
        // As long as `devices` discovers by default, for the same reasons (see there).
        @Option(help: "Without a terminal: how long to discover before asking for a number.") public var seconds: Double = 3
        @Option(help: "The pairing code, if the device asks for one.") public var pin: String?

        public init() {}

        public func run() async throws { try await run(console: StandardConsole()) }

        public func run(console: any Console) async throws {
            let environment = try await common.environment(console: console)
            await environment.controller.setPairingAgent(ConsolePairingAgent(console: console, pin: pin))
            let picker = environment.controller.makePicker(prioritizesVideoDevices: true)
            await picker.open()
            let chosen: RoutePickerEntry?
            if console.isInteractive {
                chosen = await pickWithKeys(picker)
            } else {
                chosen = await pickByNumber(picker, console: console)
            }
            await picker.close()
            guard let chosen else {
                console.write("Nothing picked.")
                await environment.shutdown()
                return
            }
            do {
                let route = try await picker.pick(chosen)
                console.write("Activated \(route.routeDisplayName) via \(route.protocolType.displayName).")
                await environment.controller.deactivate(route)
            } catch {
                await environment.shutdown()
                throw CommandFailure("cannot activate \(chosen.displayName): \(error)")
            }
            await environment.shutdown()
        }

        private func pickByNumber(_ picker: RoutePicker, console: any Console) async -> RoutePickerEntry? {
            try? await Task.sleep(for: .seconds(seconds))
            let entries = await picker.entries()
            guard !entries.isEmpty else { return nil }
            for (index, entry) in entries.enumerated() {
                console.write("\(index + 1). \(entry.displayName)  [\(entry.deviceType.rawValue), \(entry.protocolDisplayNames.joined(separator: " + "))]")
            }
            guard let line = console.readLine(prompt: "Number: "), let number = Int(line),
                entries.indices.contains(number - 1)
            else { return nil }
            return entries[number - 1]
        }

        private func pickWithKeys(_ picker: RoutePicker) async -> RoutePickerEntry? {
            let terminal = RawTerminal()
            defer { terminal.restore() }
            var selection = 0
            var entries: [RoutePickerEntry] = []
            var lastRender = ""
            while !Task.isCancelled {
                entries = await picker.entries()
                selection = min(selection, max(entries.count - 1, 0))
                let screen = render(entries, selection: selection)
                if screen != lastRender {
                    StandardConsole.writeOut("\u{1B}[2J\u{1B}[H" + screen)
                    lastRender = screen
                }
                guard let key = terminal.readKey(timeoutMilliseconds: 100) else {
                    await Task.yield()
                    continue
                }
                switch key {
                case .up: selection = max(selection - 1, 0)
                case .down: selection = min(selection + 1, max(entries.count - 1, 0))
                case .enter where !entries.isEmpty: return entries[selection]
                case .digit(let n) where entries.indices.contains(n - 1): return entries[n - 1]
                case .quit: return nil
                default: break
                }
            }
            return nil
        }

        private func render(_ entries: [RoutePickerEntry], selection: Int) -> String {
            var lines = ["Pick a device (↑/↓ or number, Enter; q quits)\r"]
            if entries.isEmpty { lines.append("  searching …\r") }
            for (index, entry) in entries.enumerated() {
                let marker = index == selection ? ">" : " "
                lines.append("\(marker) \(index + 1). \(entry.displayName)  [\(entry.deviceType.rawValue), \(entry.protocolDisplayNames.joined(separator: " + "))]\r")
            }
            return lines.joined(separator: "\n") + "\n"
        }
    }
}

/// The terminal in raw mode for key-by-key input; restores the original mode.
final class RawTerminal {
    enum Key: Equatable { case up, down, enter, quit, digit(Int), other }

    private var original = termios()
    private let active: Bool

    init() {
        active = tcgetattr(0, &original) == 0
        guard active else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON)
        tcsetattr(0, TCSANOW, &raw)
    }

    func restore() {
        guard active else { return }
        tcsetattr(0, TCSANOW, &original)
    }

    /// A key, or nil when none arrived within the timeout.
    func readKey(timeoutMilliseconds: Int32) -> Key? {
        guard let byte = readByte(timeoutMilliseconds: timeoutMilliseconds) else { return nil }
        switch byte {
        case 0x0A, 0x0D: return .enter
        case UInt8(ascii: "q"), 0x03, 0x04: return .quit
        case UInt8(ascii: "1")...UInt8(ascii: "9"): return .digit(Int(byte - UInt8(ascii: "0")))
        case UInt8(ascii: "k"): return .up
        case UInt8(ascii: "j"): return .down
        case 0x1B:
            guard let next = readByte(timeoutMilliseconds: 20) else { return .quit }
            guard next == UInt8(ascii: "["), let final = readByte(timeoutMilliseconds: 20) else { return .other }
            switch final {
            case UInt8(ascii: "A"): return .up
            case UInt8(ascii: "B"): return .down
            default: return .other
            }
        default: return .other
        }
    }

    private func readByte(timeoutMilliseconds: Int32) -> UInt8? {
        var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) > 0 else { return nil }
        var byte: UInt8 = 0
        return read(0, &byte, 1) == 1 ? byte : nil
    }
}
