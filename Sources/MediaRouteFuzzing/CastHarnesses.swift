import CastChannel

/// What a Cast receiver sends on the channel: framed `CastMessage`s whose JSON the sender decodes.
enum CastHarnesses {
    static let all: [FuzzHarness] = [castChannel]

    /// The receiver's stream in two reads (split where the first byte says): every whole message
    /// decodes or is a typed error, nothing beyond one message is held, what decodes frames again
    /// to itself, and every reply of it decodes or is refused as invalid.
    static let castChannel = FuzzHarness("cast-channel", "the Cast channel's framing, CastMessage and namespace JSON from a receiver", maximumLength: 160 * 1024) { bytes in
        var decoder = CastFrameDecoder()
        let split = bytes.isEmpty ? 0 : min(Int(bytes[0]) * 16, bytes.count)
        var envelopes: [CastEnvelope] = []
        for piece in [bytes[..<split], bytes[split...]] {
            decoder.append(Array(piece))
            while true {
                do {
                    guard let envelope = try decoder.next() else { break }
                    envelopes.append(envelope)
                } catch {
                    guard (error as? CastChannelError)?.code == .oversizedMessage else {
                        // One malformed message is skipped; the framing stays.
                        continue
                    }
                    if decoder.bufferedCount != 0 { return "bytes kept after an oversized length" }
                    break
                }
            }
            if decoder.bufferedCount > CastFrameDecoder.maximumMessageSize + 4 + bytes.count { return "\(decoder.bufferedCount) bytes buffered" }
        }
        for envelope in envelopes {
            guard let framed = try? envelope.framed() else { return "a decoded message does not frame again" }
            var again = CastFrameDecoder()
            again.append(framed)
            guard let back = try? again.next(), back == envelope else { return "a message does not survive framing: \(envelope)" }
            do {
                let reply = try CastReply.decode(envelope)
                if let id = reply.requestID, id == 0 { return "request id 0 is unsolicited, not an answer" }
                if case .mediaStatus(let list, _) = reply {
                    for status in list { _ = status.currentTime.map { $0 * (status.playbackRate ?? 1) } }
                }
            } catch {
                continue
            }
        }
        return nil
    }
}
