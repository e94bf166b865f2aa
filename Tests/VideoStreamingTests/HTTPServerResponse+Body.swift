import HTTPServing

extension HTTPServerResponse {
    /// A live response's body read to its end (the stream finished), as a device would fetch it.
    var liveBytes: [UInt8] {
        guard case .live(let body, _) = body else { return [] }
        var bytes: [UInt8] = []
        while case .bytes(let chunk) = body.read(maximum: 1 << 20) { bytes += chunk }
        return bytes
    }
}
