

/// A conversation in whole messages.
public protocol MessageChannel: Sendable {
    /// Messages from the device in arrival order. The sequence finishes when
    /// the connection is closed by either side, and throws ``TransportError``
    /// when it fails (e.g. dropped mid-session).
    var incoming: AsyncThrowingStream<[UInt8], any Error> { get }

    /// Sends one message.
    /// - Throws: ``TransportError/Code/closed`` after close, or the failure that ended the connection.
    func send(_ message: [UInt8]) async throws
}
