#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A console that records what was written and answers prompts from a script.
public final class RecordingConsole: Console {
    private let state: Mutex<(lines: [String], notices: [String], answers: [String])>

    public init(answers: [String] = []) {
        state = Mutex(([], [], answers))
    }

    public func write(_ line: String) {
        state.withLock { $0.lines.append(line) }
    }

    public func notice(_ line: String) {
        state.withLock { $0.notices.append(line) }
    }

    public func status(_ line: String) {
        write(line)
    }

    /// Every notice so far (what the real console writes to standard error).
    public var notices: [String] { state.withLock { $0.notices } }

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
