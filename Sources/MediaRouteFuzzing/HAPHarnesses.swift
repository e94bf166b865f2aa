import HAP

/// What an AirPlay 2 receiver sends while pairing and after: TLV8 messages, the steps of
/// pair-setup and pair-verify, and encrypted frames.
enum HAPHarnesses {
    static let all: [FuzzHarness] = [tlv8, pairing, channel]

    /// Decoded messages re-encode to messages that decode the same.
    static let tlv8 = FuzzHarness("hap-tlv8", "TLV8 pairing messages: decoded, re-encoded, decoded again", maximumLength: TLV8.maximumLength + 16) { bytes in
        guard let message = try? TLV8(decoding: bytes) else { return nil }
        guard let again = try? TLV8(decoding: message.bytes) else { return "a decoded message does not decode once re-encoded" }
        if again != message { return "re-encoding changed the message" }
        if message.items.reduce(0, { $0 + $1.value.count }) > bytes.count { return "values longer than the input" }
        return nil
    }

    /// RFC 8032's first test key pair: a fixed controller.
    static let controller = ControllerIdentity(
        identifier: "FUZZ-CONTROLLER",
        secretKey: [0x9D, 0x61, 0xB1, 0x9D, 0xEF, 0xFD, 0x5A, 0x60, 0xBA, 0x84, 0x4A, 0xF4, 0x92, 0xEC, 0x2C, 0xC4, 0x44, 0x49, 0xC5, 0x69, 0x7B, 0x32, 0x69, 0x19, 0x70, 0x3B, 0xAC, 0x03, 0x1C, 0xAE, 0x7F, 0x60],
        publicKey: [0xD7, 0x5A, 0x98, 0x01, 0x82, 0xB1, 0x0A, 0xB7, 0xD5, 0x4B, 0xFE, 0xD3, 0xC9, 0x64, 0x07, 0x3A, 0x0E, 0xE1, 0x72, 0xF3, 0xDA, 0xA6, 0x23, 0x25, 0xAF, 0x02, 0x1A, 0x68, 0xF7, 0x07, 0x51, 0x1A])

    /// A receiver's answers to pair-setup (transient and PIN) and pair-verify: the first input
    /// byte chooses which, the rest is the answer. Anything but a typed error or a next step is a
    /// finding; an answer that pairs without the right proof would be one too.
    static let pairing = FuzzHarness("hap-pairing", "a receiver's pair-setup and pair-verify answers", maximumLength: 4096) { bytes in
        guard let choice = bytes.first else { return nil }
        let answer = Array(bytes.dropFirst())
        switch choice % 3 {
        case 0:
            var setup = PairSetup(mode: .transient)
            if let step = try? setup.receive(answer), case .paired = step { return "transient pair-setup finished at its first answer" }
        case 1:
            var setup = PairSetup(mode: .pin("1234"), controller: controller)
            if let step = try? setup.receive(answer), case .paired = step { return "PIN pair-setup finished at its first answer" }
        default:
            let receiver = ReceiverIdentity(identifier: "4F:8A:22:10:9C:01", publicKey: [UInt8](repeating: 2, count: 32))
            guard var verify = try? PairVerify(controller: controller, receiver: receiver, ephemeralSecret: [UInt8](repeating: 3, count: 32)) else { return nil }
            // Without the receiver's secret key no answer can carry a valid signature.
            if let step = try? verify.receive(answer), case .send = step { return "pair-verify accepted a receiver it cannot have verified" }
        }
        return nil
    }

    /// Encrypted frames, in pieces split where the first byte says: no trap, nothing decrypts
    /// without the key, and a partial frame held is never more than one frame.
    static let channel = FuzzHarness("hap-channel", "encrypted AirPlay 2 control frames, in two reads", maximumLength: 16 * 1024) { bytes in
        guard var channel = try? HAPChannel.control(sharedSecret: [UInt8](repeating: 5, count: 32)) else { return nil }
        let split = bytes.isEmpty ? 0 : min(Int(bytes[0]) * 16, bytes.count)
        do {
            let first = try channel.open(Array(bytes[..<split]))
            let second = try channel.open(Array(bytes[split...]))
            if !first.isEmpty || !second.isEmpty { return "\(first.count + second.count) bytes decrypted without the key" }
        } catch {
            return nil
        }
        if channel.pendingCount > 2 + HAPChannel.maximumFrame + 16 { return "\(channel.pendingCount) bytes held for a partial frame" }
        return nil
    }
}
