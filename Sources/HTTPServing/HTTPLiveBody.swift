/// What a live response reads from: bytes as they come, and a wake-up when more can be read.
public protocol HTTPLiveBody: Sendable {
    /// Up to `maximum` bytes now.
    func read(maximum: Int) -> HTTPLiveChunk
    /// Calls `wake` once (from any thread) when a read would give bytes or the end.
    func whenReadable(_ wake: @escaping @Sendable () -> Void)
    /// The response ended (its peer went, or it was read to the end).
    func close()
}
