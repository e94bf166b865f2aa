/// Splits a receiver's byte stream into responses. Every size is bounded (``RTSPMessageFraming``):
/// the head (status line and headers) to ``maximumHeadBytes``, the body to ``maximumBodyBytes``;
/// past either, or on anything that is not RTSP/1.0, it fails and stays failed.
public struct RTSPResponseParser: Sendable {
    public static let maximumHeadBytes = RTSPMessageFraming.maximumHeadBytes
    public static let maximumBodyBytes = RTSPMessageFraming.maximumBodyBytes
    public static let maximumHeaders = RTSPMessageFraming.maximumHeaders

    private var framing = RTSPMessageFraming()
    private var failure: RTSPError?

    public init() {}

    /// Takes bytes as they come; returns the responses they complete, in order.
    public mutating func consume(_ bytes: some Collection<UInt8>) throws(RTSPError) -> [RTSPResponse] {
        if let failure { throw failure }
        framing.append(bytes)
        var responses: [RTSPResponse] = []
        do throws(RTSPError) {
            while let message = try framing.next("a response") {
                let parts = message.start.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
                guard parts.count >= 2, parts[0] == "RTSP/1.0", parts[1].count == 3, let status = Int(parts[1]), (100...599).contains(status) else {
                    throw RTSPError("not an RTSP/1.0 status line: \(message.start.prefix(60))")
                }
                responses.append(RTSPResponse(status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: message.headers, body: message.body))
            }
        } catch {
            failure = error
            framing.reset()
            throw error
        }
        return responses
    }
}
