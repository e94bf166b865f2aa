#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Where the CLI writes and reads lines; tests substitute a recording console.
public protocol Console: Sendable {
    func write(_ line: String)
    /// A notice about the environment (a transport that cannot open, where the routing
    /// system runs): standard error, so that `--json` output stays parseable.
    func notice(_ line: String)
    /// A line that replaces the previous status line on a terminal (a position that advances).
    func status(_ line: String)
    /// Reads one line from the person (nil at end of input).
    func readLine(prompt: String) -> String?
    /// Whether a person sits at a terminal (interactive prompts and keys work).
    var isInteractive: Bool { get }
}
