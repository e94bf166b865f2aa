import Foundation
import IOReactor
#if canImport(Glibc)
import Glibc
#endif

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
