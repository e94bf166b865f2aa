

/// Opens UDP sockets bound to the device (for protocols that use several: RAOP's audio,
/// control and timing).
public protocol DatagramSockets: Sendable {
    func open() async throws(TransportError) -> any DatagramSocket
}
