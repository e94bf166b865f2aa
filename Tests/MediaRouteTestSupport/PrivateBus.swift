import Foundation
import IOReactor
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn` (Foundation's `Process` can hang in
/// `waitUntilExit` off the main thread on Linux).
public final class ChildProcess: Sendable {
    public let pid: pid_t

    /// Starts `arguments[0]` (a path) with `arguments`; its output goes to `outputFD`, or nowhere.
    public init(_ arguments: [String], outputFD: Int32? = nil, environment: [String: String] = [:]) throws {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        do {
            pid = try spawnProcess(arguments, environment: merged, output: outputFD.map { .descriptor($0) } ?? .discarded)
        } catch {
            throw PrivateBusError(message: "\(error)")
        }
    }

    /// Sends a signal (SIGTERM by default).
    public func kill(_ signal: Int32 = SIGTERM) {
        _ = Glibc.kill(pid, signal)
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

/// A `dbus-daemon` on a private socket, started for one test and stopped afterwards.
public final class PrivateBus: Sendable {
    public let address: String
    public let directory: String
    private let daemon: ChildProcess

    /// Starts a session-type bus in a fresh temporary directory.
    /// - Throws: when `dbus-daemon` is missing or does not come up.
    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mediaroute-bus-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let socket = directory + "/bus"
        address = "unix:path=" + socket
        daemon = try ChildProcess(["/usr/bin/dbus-daemon", "--session", "--address=\(address)", "--nofork", "--nopidfile"])
        let deadline = Date().addingTimeInterval(5)
        // The socket file appears at bind(), before listen(): wait until a connect succeeds.
        while !Self.accepts(socket) {
            guard Date() < deadline else { throw PrivateBusError(message: "dbus-daemon did not start") }
            usleep(2_000)
        }
    }

    /// Whether a unix socket at `path` accepts connections.
    public static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// Whether this machine can run a private bus (prints why not when it cannot).
    public static var isAvailable: Bool {
        let present = FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon")
        if !present { print("skipping: /usr/bin/dbus-daemon is not installed (apt-get install dbus-daemon)") }
        return present
    }

    public func stop() {
        if daemon.isRunning {
            daemon.kill()
            daemon.wait()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }

    /// Runs a command to completion on a thread of its own (never blocking the
    /// cooperative pool, which may have to serve the command's calls).
    public func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await ChildProcess.runOffPool([executable] + arguments)
    }
}

public struct PrivateBusError: Error, CustomStringConvertible {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// Lines a child process prints, with the time each arrived.
public final class LineCollector: Sendable {
    public let lines = Locked<[(ContinuousClock.Instant, String)]>([])
    public let process: ChildProcess

    public init(_ arguments: [String], environment: [String: String]) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw PrivateBusError(message: "pipe") }
        process = try ChildProcess(arguments, outputFD: fds[1], environment: environment)
        close(fds[1])
        let readEnd = fds[0]
        let lines = self.lines
        Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                pending.append(contentsOf: buffer[0..<n])
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    lines.withLock { $0.append((ContinuousClock.now, line)) }
                }
            }
            close(readEnd)
        }.start()
    }

    public func first(after start: ContinuousClock.Instant, where predicate: (String) -> Bool) -> (ContinuousClock.Instant, String)? {
        lines.value.first { $0.0 >= start && predicate($0.1) }
    }

    public func stop() {
        process.kill()
        process.wait()
    }
}
