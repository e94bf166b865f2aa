import Foundation
import IOReactor
public import MediaRouteTesting
#if canImport(Glibc)
import Glibc
#endif

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
