public import HTTPServing

/// A ``LiveByteStream/Reader`` as the body of an HTTP response (a live audio or video stream).
public struct LiveReaderBody: HTTPLiveBody {
    public let reader: LiveByteStream.Reader

    public init(reader: LiveByteStream.Reader) {
        self.reader = reader
    }

    public func read(maximum: Int) -> HTTPLiveChunk {
        switch reader.read(maximum: maximum) {
        case .bytes(let bytes): .bytes(bytes)
        case .empty: .none
        case .ended: .ended
        }
    }

    public func whenReadable(_ wake: @escaping @Sendable () -> Void) { reader.whenReadable(wake) }

    public func close() { reader.close() }
}
