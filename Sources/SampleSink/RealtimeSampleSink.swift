#if canImport(Glibc)
import Glibc
#endif
import IOReactor
public import RoutingModel
import Synchronization

/// Carries real-time sample buffers from an app to a route.
///
/// The first buffer acquires delivery in its format (a buffer in another format acquires
/// again); the bytes then go through the acquired descriptor, paced by the device's clock
/// where delivery runs (in the app's process or in the daemon, the same way). `send`
/// returns once the bytes are buffered, so a loop that sends as fast as it can is held to
/// the device's pace. Send from one task at a time.
public struct RealtimeSampleSink: Sendable {
    public let session: MediaOutputSession
    private let writer: SampleWriter

    /// A sink that acquires delivery with `acquire` when the first buffer (or a new format) comes.
    public init(session: MediaOutputSession, acquire: @escaping @Sendable (SampleBuffer.Format) async throws -> AudioAcquisition) {
        self.session = session
        self.writer = SampleWriter(acquire: acquire)
    }

    /// A sink over a delivery already acquired (a group's, `acquireGroupAudio`): it takes that
    /// format only, and its writer owns the descriptor.
    public init(acquired acquisition: AudioAcquisition, session: MediaOutputSession) {
        let unused = Mutex<AudioAcquisition?>(acquisition)
        self.init(session: session) { format in
            guard format == acquisition.format, let taken = unused.withLock({ value -> AudioAcquisition? in
                defer { value = nil }
                return value
            }) else {
                throw MediaDeviceError(.unsupported, "this stream was opened for \(acquisition.format.encoding.pcmName ?? "?")/\(acquisition.format.sampleRate)/\(acquisition.format.channels)")
            }
            return taken
        }
    }

    /// Delivers one buffer, in presentation order.
    /// - Throws: ``MediaDeviceError`` `unsupported` for a format the route does not take,
    ///   `sessionFailed` once delivery ended (the route stopped, or the device went away).
    public func send(_ buffer: SampleBuffer) async throws {
        try await writer.write(buffer)
    }

    /// Ends the stream: what was sent plays out, then delivery stops; the sink takes no more
    /// buffers (start delivery again for a new stream).
    public func finish() async {
        await writer.finish()
    }

    /// The delivery acquired so far (nil before the first buffer).
    public var acquisition: AudioAcquisition? {
        get async { await writer.acquisition }
    }
}

/// The descriptor a sink writes into, acquired on demand.
actor SampleWriter {
    private let acquire: @Sendable (SampleBuffer.Format) async throws -> AudioAcquisition
    private(set) var acquisition: AudioAcquisition?
    /// Delivery ended under the writer (the route stopped it), or the app finished the stream.
    private var ended = false

    init(acquire: @escaping @Sendable (SampleBuffer.Format) async throws -> AudioAcquisition) {
        self.acquire = acquire
    }

    deinit {
        if let acquisition { Glibc.close(acquisition.descriptor) }
    }

    func write(_ buffer: SampleBuffer) async throws {
        guard buffer.format.bytesPerFrame != nil else {
            throw MediaDeviceError(.unsupported, "real-time delivery takes PCM (s16le or f32le), not encoded frames")
        }
        guard !ended else { throw MediaDeviceError(.sessionFailed, "real-time delivery has ended") }
        if acquisition?.format != buffer.format {
            close()
            acquisition = try await acquire(buffer.format)
        }
        guard let fd = acquisition?.descriptor, !ended else {
            throw MediaDeviceError(.sessionFailed, "real-time delivery has ended")
        }
        var offset = 0
        while offset < buffer.data.count {
            let sent = buffer.data.withUnsafeBytes { bytes in
                Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN:
                // The route's buffer is full: wait for the device to take some. Delivery drains
                // at the device's pace whatever the device does, so only a dead reader stops this.
                guard await IOReactor.shared.ready(fd, for: .writable, before: IOReactor.shared.now + .seconds(5)) else {
                    throw MediaDeviceError(.timedOut, "real-time delivery took nothing for 5 s")
                }
            default:
                ended = true
                throw MediaDeviceError(.sessionFailed, "real-time delivery has ended")
            }
        }
    }

    /// The app's end of the stream: nothing more is sent through this sink.
    func finish() {
        close()
        ended = true
    }

    private func close() {
        guard let acquisition else { return }
        Glibc.close(acquisition.descriptor)
        self.acquisition = nil
    }
}

extension SystemRoutingBackend {
    /// Starts real-time sample delivery on a route: the sink acquires paced delivery in the
    /// format of the first buffer sent.
    public func startRealtimeSampleDelivery(on session: MediaOutputSession) async throws -> RealtimeSampleSink {
        try await beginRealtimeSampleDelivery(on: session)
        return RealtimeSampleSink(session: session) { format in try await self.acquireAudio(on: session, format: format) }
    }
}
