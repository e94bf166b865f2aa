import Synchronization
public import Transport

/// A byte stream to an AirPlay 2 receiver that is plain until pairing keys it, then sealed
/// both ways with a ``HAPChannel``: the same RTSP client speaks over it before and after.
///
/// Pairing is a plain exchange on the same TCP stream; ``encrypt(with:)`` switches once its
/// last answer was read and before the next request is written (a receiver sends nothing
/// unasked in between). A frame that fails its tag ends ``incoming`` with an error: the
/// connection is unusable, as the receiver's side would say.
public final class HAPByteStream: ByteStream {
    private let inner: any ByteStream
    private let channel = ChannelCell()
    public let incoming: AsyncThrowingStream<[UInt8], any Error>
    private let reader: Task<Void, Never>

    public init(_ inner: any ByteStream) {
        self.inner = inner
        let (incoming, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingOldest(64))
        self.incoming = incoming
        let channel = channel
        reader = Task {
            do {
                for try await chunk in inner.incoming {
                    let plain = try channel.state.withLock { (channel: inout HAPChannel?) throws(HAPError) -> [UInt8] in
                        guard var open = channel else { return chunk }
                        defer { channel = open }
                        return try open.open(chunk)
                    }
                    if !plain.isEmpty, case .dropped = continuation.yield(plain) {
                        // A reader 64 chunks behind: the RTSP client reads each answer as it comes.
                        continuation.finish(throwing: TransportError(.connectionLost, "the receiver's bytes were not read"))
                        return
                    }
                }
                continuation.finish()
            } catch let error as HAPError {
                continuation.finish(throwing: TransportError(.connectionLost, "the encrypted channel failed: \(error)"))
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    deinit { reader.cancel() }

    /// From now on, everything written is sealed and everything read is opened.
    public func encrypt(with channel: HAPChannel) {
        self.channel.state.withLock { $0 = channel }
    }

    public var isEncrypted: Bool { channel.state.withLock { $0 != nil } }

    /// The stream underneath measured it: sealing adds nothing to a round trip.
    public func leastRoundTrip() async -> Duration? { await inner.leastRoundTrip() }
    public func smoothedRoundTrip() async -> Duration? { await inner.smoothedRoundTrip() }

    public func write(_ bytes: [UInt8]) async throws(TransportError) {
        let sealed = try channel.state.withLock { (channel: inout HAPChannel?) throws(TransportError) -> [UInt8] in
            guard var open = channel else { return bytes }
            defer { channel = open }
            do {
                return try open.seal(bytes)
            } catch {
                throw TransportError(.connectionLost, "cannot seal for the receiver: \(error)")
            }
        }
        try await inner.write(sealed)
    }

    public var localAddress: String { inner.localAddress }
}

/// The channel, shared by the writer and the reader task.
private final class ChannelCell: Sendable {
    let state = Mutex<HAPChannel?>(nil)
}
