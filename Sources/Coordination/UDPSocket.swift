#if canImport(Glibc)
import Glibc
#endif
import IPNetwork
import MediaClock
import Synchronization
import Transport

/// A bound UDP socket whose datagrams are read on a thread of its own (asleep in
/// `recvfrom` until one arrives), stamped with their arrival on the system host
/// clock, and delivered as an async sequence.
public final class UDPSocket: Sendable {
    let fd: Int32
    /// The address the socket is bound to (with the port the kernel chose for port 0).
    public let localAddress: UDPAddress
    /// Datagrams as they arrive, with the sender and the arrival time on the system host clock.
    public let datagrams: AsyncStream<(bytes: [UInt8], from: UDPAddress, receivedAt: Duration)>
    private let closed = Mutex(false)

    /// Binds to `address` (port 0: any free port).
    public init(binding address: UDPAddress) throws(TransportError) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
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
        let (stream, continuation) = AsyncStream.makeStream(of: (bytes: [UInt8], from: UDPAddress, receivedAt: Duration).self)
        datagrams = stream
        let reader = UDPReader(fd: fd, continuation: continuation)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(reader).toOpaque()
        if pthread_create(&thread, nil, { context in
            let reader = Unmanaged<UDPReader>.fromOpaque(context!).takeRetainedValue()
            reader.run()
            return nil
        }, context) == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<UDPReader>.fromOpaque(context).release()
            continuation.finish()
        }
    }

    /// Sends one datagram (thread-safe; the kernel serializes `sendto`).
    public func send(_ bytes: [UInt8], to address: UDPAddress) {
        guard !closed.withLock({ $0 }), var target = address.sockaddr else { return }
        _ = bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Stops reading (the reader thread wakes from `recvfrom` and ends) and closes the socket.
    public func close() {
        let wasOpen = closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard wasOpen else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    deinit { close() }
}

/// The reader thread's state, passed through `pthread_create`'s context pointer.
private final class UDPReader: Sendable {
    let fd: Int32
    let continuation: AsyncStream<(bytes: [UInt8], from: UDPAddress, receivedAt: Duration)>.Continuation

    init(fd: Int32, continuation: AsyncStream<(bytes: [UInt8], from: UDPAddress, receivedAt: Duration)>.Continuation) {
        self.fd = fd
        self.continuation = continuation
    }

    func run() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            // Stamped here, not when a task gets to it: clock samples need the arrival time.
            continuation.yield((Array(buffer.prefix(count)), UDPAddress(from), SystemHostClock().now()))
        }
        continuation.finish()
    }
}
