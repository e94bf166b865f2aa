import MediaDevice

/// Carries real-time sample buffers from an app straight to an extension.
public struct RealtimeSampleSink: Sendable {
    let handler: any RealtimeSampleHandling
    public let session: MediaOutputSession

    public init(handler: any RealtimeSampleHandling, session: MediaOutputSession) {
        self.handler = handler
        self.session = session
    }

    /// Delivers one buffer, in presentation order.
    public func send(_ buffer: SampleBuffer) async {
        await handler.receiveSamples(buffer, session: session)
    }
}
