#if canImport(Glibc)
import Glibc
#endif

/// A socket that takes whole packets of at most ``mtu`` bytes, owned by this object
/// (closed when it goes).
public final class PacketSocket: Sendable {
    /// The largest packet the socket takes.
    public let mtu: Int
    private let descriptor: Int32
    /// A Bluetooth socket's send buffer (its `TIOCOUTQ` is the room left in it); nil for others.
    /// Read once: ``queuedBytes`` is asked after every delivery period.
    private let bluetoothSendBuffer: Int32?

    /// Takes ownership of `descriptor`.
    public init(owning descriptor: Int32, mtu: Int) {
        self.descriptor = descriptor
        self.mtu = mtu
        var address = sockaddr()
        var length = socklen_t(MemoryLayout<sockaddr>.size)
        var buffer: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        if getsockname(descriptor, &address, &length) == 0, address.sa_family == 31 /* AF_BLUETOOTH */,
            getsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &buffer, &size) == 0
        {
            bluetoothSendBuffer = buffer
        } else {
            bluetoothSendBuffer = nil
        }
    }

    deinit {
        close(descriptor)
    }

    /// What became of a packet given to ``send(_:)``.
    public enum SendOutcome: Sendable, Hashable {
        /// The socket took it whole.
        case sent
        /// The socket was full (or took only part): the packet is lost, the stream goes on.
        case dropped
        /// The other end closed the socket (or reset it): no packet will be taken again.
        case closed(errno: Int32)
    }

    /// Bytes written but not yet sent by the socket. Bluetooth sockets answer `TIOCOUTQ` with
    /// the room left in their send buffer (as PipeWire reads it), others with the bytes queued.
    public var queuedBytes: Int {
        var value: Int32 = 0
        guard ioctl(descriptor, UInt(TIOCOUTQ), &value) == 0 else { return 0 }
        guard let buffer = bluetoothSendBuffer else { return Int(max(0, value)) }
        return Int(max(0, buffer - value))
    }

    /// Sends one packet without waiting. Real-time audio drops a packet the socket
    /// cannot take now rather than falling behind; a closed socket ends the stream.
    @discardableResult
    public func send(_ packet: [UInt8]) -> SendOutcome {
        let sent = packet.withUnsafeBytes { bytes in
            Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        }
        if sent == packet.count { return .sent }
        guard sent < 0 else { return .dropped }
        let code = errno
        switch code {
        case EPIPE, ECONNRESET, ENOTCONN, EBADF, ESHUTDOWN, ECONNREFUSED: return .closed(errno: code)
        default: return .dropped
        }
    }
}
