#if canImport(Glibc)
import Glibc
#endif
public import IOReactor
public import IPNetwork
public import MediaClock
import Synchronization
public import Transport

/// A bound UDP socket whose datagrams are read by the process's ``IOReactor`` as
/// they arrive, stamped with their arrival on the socket's host clock, and delivered
/// as an async sequence.
public final class UDPSocket: Sendable {
    let fd: Int32
    /// The address the socket is bound to (with the port the kernel chose for port 0).
    public let localAddress: UDPAddress
    /// Datagrams as they arrive, with the sender and the arrival time on ``clock``.
    public let datagrams: AsyncStream<(bytes: [UInt8], from: UDPAddress, receivedAt: Duration)>
    private let continuation: AsyncStream<(bytes: [UInt8], from: UDPAddress, receivedAt: Duration)>.Continuation
    private let closed = Atomic<Bool>(false)
    private let watch: IOWatch
    /// What arrivals are stamped with.
    public let clock: any HostClock

    /// Binds to `address` (port 0: any free port).
    public init(binding address: UDPAddress, clock: any HostClock = SystemHostClock(), reactor: IOReactor = .shared) throws(TransportError) {
        self.clock = clock
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw TransportError(.unavailable, "cannot open a UDP socket (errno \(errno))") }
        guard var bindAddress = address.sockaddr else {
            Glibc.close(fd)
            throw TransportError(.unreachable, "\(address.host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &bindAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            Glibc.close(fd)
            throw TransportError(.unavailable, "cannot bind \(address) (errno \(errno))")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        localAddress = UDPAddress(actual)
        // Bounded before anyone checks a seal: a flood costs at most 256 datagrams of memory.
        let (stream, continuation) = AsyncStream.makeStream(
            of: (bytes: [UInt8], from: UDPAddress, receivedAt: Duration).self, bufferingPolicy: .bufferingNewest(256))
        datagrams = stream
        self.continuation = continuation
        let buffer = Mutex([UInt8](repeating: 0, count: 65_536))
        do {
            watch = try reactor.watch(fd, for: .readable) { _ in
                buffer.withLock { Self.drain(fd, into: &$0, clock: clock, continuation: continuation) }
            }
        } catch {
            Glibc.close(fd)
            continuation.finish()
            throw TransportError(.unavailable, "cannot watch the UDP socket: \(error)")
        }
    }

    /// Delivers every datagram queued on `fd`.
    private static func drain(
        _ fd: Int32, into buffer: inout [UInt8], clock: any HostClock,
        continuation: AsyncStream<(bytes: [UInt8], from: UDPAddress, receivedAt: Duration)>.Continuation
    ) {
        while true {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &length) }
                }
            }
            if count < 0 && errno == EINTR { continue }
            // Empty datagrams carry nothing; errors (EAGAIN: all read) end this turn.
            guard count > 0 else { return }
            // Stamped here, not when a task gets to it: clock samples need the arrival time.
            continuation.yield((Array(buffer.prefix(count)), UDPAddress(from), clock.now()))
        }
    }

    /// Sends one datagram (thread-safe; the kernel serializes `sendto`).
    public func send(_ bytes: [UInt8], to address: UDPAddress) {
        guard !closed.load(ordering: .acquiring), var target = address.sockaddr else { return }
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Stops reading (``datagrams`` finishes) and closes the socket, on the reactor
    /// thread once no read can be under way.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let fd = fd, continuation = continuation
        watch.cancel {
            Glibc.close(fd)
            continuation.finish()
        }
    }

    deinit { close() }
}
