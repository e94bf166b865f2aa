#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Where the CLI writes and reads lines; tests substitute a recording console.
public protocol Console: Sendable {
    func write(_ line: String)
    /// Reads one line from the person (nil at end of input).
    func readLine(prompt: String) -> String?
    /// Whether a person sits at a terminal (interactive prompts and keys work).
    var isInteractive: Bool { get }
}

/// The process's standard output and input.
public struct StandardConsole: Console {
    public init() {}

    public func write(_ line: String) {
        Self.writeOut(line + "\n")
    }

    public func readLine(prompt: String) -> String? {
        Self.writeOut(prompt)
        return Swift.readLine()
    }

    /// Writes straight to file descriptor 1, so lines are never held in a buffer.
    static func writeOut(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    public var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }
}

/// A console that records what was written and answers prompts from a script.
public final class RecordingConsole: Console {
    private let state: Mutex<(lines: [String], answers: [String])>

    public init(answers: [String] = []) {
        state = Mutex(([], answers))
    }

    public func write(_ line: String) {
        state.withLock { $0.lines.append(line) }
    }

    public func readLine(prompt: String) -> String? {
        state.withLock { state in
            state.lines.append(prompt)
            return state.answers.isEmpty ? nil : state.answers.removeFirst()
        }
    }

    public var isInteractive: Bool { false }

    /// Everything written so far.
    public var lines: [String] { state.withLock { $0.lines } }
}
