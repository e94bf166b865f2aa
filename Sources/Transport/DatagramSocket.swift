

/// A UDP socket of ours that exchanges datagrams with one device only: it sends to the
/// device's host, and what other hosts send to it is dropped.
public protocol DatagramSocket: Sendable {
    /// Our port, to tell the device.
    var localPort: Int { get }
    /// Datagrams from the device's host; finishes when the socket closes.
    var incoming: AsyncStream<DeviceDatagram> { get }
    /// Sends one datagram to `port` on the device's host (dropped, not queued, when the
    /// socket cannot take it now).
    func send(_ bytes: [UInt8], toPort port: Int) async throws(TransportError)
    /// Closes the socket; ``incoming`` finishes. Idempotent.
    func close() async
}
