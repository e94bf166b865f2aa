#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The process's standard output and input.
public struct StandardConsole: Console {
    public init() {}

    public func write(_ line: String) {
        // A status line left on the terminal is ended first.
        let pending = Self.statusPending.exchange(false, ordering: .relaxed)
        Self.writeOut((pending ? "\n" : "") + line + "\n")
    }

    /// Whether the terminal's last line is a status line without its newline.
    private static let statusPending = Atomic<Bool>(false)

    public func notice(_ line: String) {
        Self.write(line + "\n", to: 2)
    }

    public func status(_ line: String) {
        // On a terminal the line is rewritten in place; in a pipe each one is a line of its own.
        if isatty(1) == 1 {
            Self.writeOut("\r\u{1B}[K" + line)
            Self.statusPending.store(true, ordering: .relaxed)
        } else {
            write(line)
        }
    }

    public func readLine(prompt: String) -> String? {
        Self.writeOut(prompt)
        return Swift.readLine()
    }

    /// Writes straight to file descriptor 1, so lines are never held in a buffer.
    static func writeOut(_ text: String) { write(text, to: 1) }

    static func write(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }

    public var isInteractive: Bool { isatty(0) == 1 && isatty(1) == 1 }
}
