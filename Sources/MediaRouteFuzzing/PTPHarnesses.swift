import PTP

/// What any host on the LAN can send to the PTP ports.
enum PTPHarnesses {
    static let all: [FuzzHarness] = [message]

    /// Decoded messages re-encode to messages that decode the same.
    static let message = FuzzHarness("ptp-message", "PTP datagrams on UDP 319/320: decoded, re-encoded, decoded again", maximumLength: 2048) { bytes in
        guard let message = try? PTPMessage(decoding: bytes) else { return nil }
        guard let again = try? PTPMessage(decoding: message.bytes) else { return "a decoded \(message.kind) does not decode once re-encoded" }
        if again != message { return "re-encoding changed a \(message.kind)" }
        if message.bytes.count > bytes.count { return "re-encoded longer than received" }
        return nil
    }
}
