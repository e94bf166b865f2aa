import Foundation
import IOReactor
#if canImport(Glibc)
public import Glibc
#endif

/// A child process started with `posix_spawn` (Foundation's `Process` can hang in
/// `waitUntilExit` off the main thread on Linux).
public final class ChildProcess: Sendable {
    public let pid: pid_t
    /// Whether it leads a process group of its own, which ``kill(_:)`` signals whole.
    public let leadsProcessGroup: Bool

    /// Starts `arguments[0]` (a path) with `arguments`; its output goes to `outputFD`, or nowhere.
    /// With `ownProcessGroup`, ``kill(_:)`` also reaches what it started in the background (a
    /// shell's `(recorder <fifo &)` still waiting for a writer when a test ends early).
    public init(_ arguments: [String], outputFD: Int32? = nil, environment: [String: String] = [:], ownProcessGroup: Bool = false) throws {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        do {
            pid = try spawnProcess(arguments, environment: merged, output: outputFD.map { .descriptor($0) } ?? .discarded,
                                   newProcessGroup: ownProcessGroup)
        } catch {
            throw PrivateBusError(message: "\(error)")
        }
        leadsProcessGroup = ownProcessGroup
    }

    /// Sends a signal (SIGTERM by default), to its whole process group when it leads one.
    public func kill(_ signal: Int32 = SIGTERM) {
        _ = Glibc.kill(leadsProcessGroup ? -pid : pid, signal)
    }

    /// Waits for the process to end and returns its exit status (or 128+signal).
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    /// Whether it is still running.
    public var isRunning: Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// ``run(_:environment:)`` on a dedicated thread.
    public static func runOffPool(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try run(arguments, environment: environment) })
            }
        }
    }

    /// Runs a command to completion and returns its exit status and output.
    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw PrivateBusError(message: "pipe failed") }
        let child: ChildProcess
        do {
            child = try ChildProcess(arguments, outputFD: fds[1], environment: environment)
        } catch {
            close(fds[0]); close(fds[1])
            throw error
        }
        close(fds[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fds[0], &buffer, buffer.count)
            if count <= 0 { break }
            output.append(contentsOf: buffer.prefix(count))
        }
        close(fds[0])
        return (child.wait(), String(decoding: output, as: UTF8.self))
    }
}
