import Testing
@testable import HAP

@Suite struct HAPChannelTests {
    static let secret = [UInt8](repeating: 0x42, count: 32)

    /// The two ends of one channel: the receiver reads with the controller's write key.
    static func pair() throws -> (controller: HAPChannel, receiver: HAPChannel) {
        let controller = try HAPChannel.control(sharedSecret: secret)
        let salt = Array("Control-Salt".utf8)
        let receiver = HAPChannel(
            writeKey: try HAPCrypto.hkdfSHA512(secret: secret, salt: salt, info: Array("Control-Read-Encryption-Key".utf8)),
            readKey: try HAPCrypto.hkdfSHA512(secret: secret, salt: salt, info: Array("Control-Write-Encryption-Key".utf8)))
        return (controller, receiver)
    }

    @Test func framesSplitAtAKilobyteAndArriveInAnyPieces() throws {
        var (controller, receiver) = try Self.pair()
        let request = (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let wire = try controller.seal(request)
        #expect(wire.count == 3000 + 3 * (2 + 16))
        var received: [UInt8] = []
        var index = 0
        for piece in [1, 2, 500, 1100, 7] {
            let end = min(wire.count, index + piece)
            received += try receiver.open(Array(wire[index..<end]))
            index = end
        }
        received += try receiver.open(Array(wire[index...]))
        #expect(received == request)
        #expect(receiver.pendingCount == 0)
        // The second message uses the next nonces.
        let again = try controller.seal(Array("GET /info RTSP/1.0\r\n\r\n".utf8))
        #expect(try receiver.open(again) == Array("GET /info RTSP/1.0\r\n\r\n".utf8))
    }

    @Test func aForgedOrReplayedFrameEndsTheChannel() throws {
        var (controller, receiver) = try Self.pair()
        let first = try controller.seal([1, 2, 3])
        _ = try receiver.open(first)
        // Replayed: the counter has moved on, the tag fails.
        #expect(throws: HAPError.self) { try receiver.open(first) }
        // And the channel stays failed.
        let next = try controller.seal([4])
        #expect(throws: HAPError.self) { try receiver.open(next) }
        var (controller2, receiver2) = try Self.pair()
        var forged = try controller2.seal([9, 9, 9])
        forged[2] ^= 0x80
        #expect(throws: HAPError.self) { try receiver2.open(forged) }
    }

    @Test func aLengthOverAKilobyteIsRefusedBeforeWaitingForIt() throws {
        var (_, receiver) = try Self.pair()
        #expect(throws: HAPError.self) { try receiver.open([0x01, 0x04]) }  // 1025
    }
}
