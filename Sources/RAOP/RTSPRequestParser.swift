/// Splits a byte stream of requests into requests: what an AirPlay 2 receiver sends on its
/// event channel (`POST /command` with a property list, and the like). Bounded as
/// ``RTSPResponseParser``; a request line that is not `METHOD URI RTSP/1.0` fails it for good.
public struct RTSPRequestParser: Sendable {
    private var framing = RTSPMessageFraming()
    private var failure: RTSPError?

    public init() {}

    /// Takes bytes as they come; returns the requests they complete, in order (their header
    /// fields by lowercased name, `CSeq` among them).
    public mutating func consume(_ bytes: some Collection<UInt8>) throws(RTSPError) -> [RTSPRequest] {
        if let failure { throw failure }
        framing.append(bytes)
        var requests: [RTSPRequest] = []
        do throws(RTSPError) {
            while let message = try framing.next("a request") {
                let parts = message.start.split(separator: " ", omittingEmptySubsequences: false)
                guard parts.count == 3, parts[2] == "RTSP/1.0", !parts[0].isEmpty, parts[0].count <= 32, !parts[1].isEmpty,
                    parts[0].allSatisfy({ $0.isASCII && ($0.isUppercase || $0 == "_") })
                else { throw RTSPError("not an RTSP/1.0 request line: \(message.start.prefix(60))") }
                requests.append(RTSPRequest(
                    method: String(parts[0]), uri: String(parts[1]), headers: message.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                    body: message.body))
            }
        } catch {
            failure = error
            framing.reset()
            throw error
        }
        return requests
    }

    /// The answer to a request with sequence number `cseq`: `200 OK`, no body.
    public static func okResponse(cseq: String?) -> [UInt8] {
        let number = cseq.flatMap { Int($0.trimmingWhitespace) } ?? 0
        return Array("RTSP/1.0 200 OK\r\nCSeq: \(number)\r\nServer: MediaRoute/1.0\r\n\r\n".utf8)
    }
}
