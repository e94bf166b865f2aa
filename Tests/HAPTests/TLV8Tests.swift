import Testing
@testable import HAP

@Suite struct TLV8Tests {
    @Test func aLongValueGoesInFragmentsAndComesBackWhole() throws {
        let key = (0..<384).map { UInt8(truncatingIfNeeded: $0) }
        let message = TLV8([(.state, [3]), (.publicKey, key), (.proof, [1, 2, 3])])
        let bytes = message.bytes
        #expect(bytes.count == 3 + (2 + 255) + (2 + 129) + 5)
        #expect(Array(bytes[3..<5]) == [0x03, 255])
        let decoded = try TLV8(decoding: bytes)
        #expect(decoded == message)
        #expect(decoded[.publicKey] == key)
        #expect(decoded.byte(.state) == 3)
        #expect(decoded.byte(.proof) == nil)  // three bytes: not one
    }

    @Test func twoItemsOfOneTypeInARowKeepASeparator() throws {
        var message = TLV8([(.identifier, Array(repeating: 1, count: 255))])
        message.append(.identifier, [2])
        let bytes = message.bytes
        #expect(Array(bytes[257..<259]) == [0xFF, 0])
        let decoded = try TLV8(decoding: bytes)
        #expect(decoded == message)
        // Without the separator the two would be one 256-byte value.
        let joined = try TLV8(decoding: Array(bytes[..<257]) + Array(bytes[259...]))
        #expect(joined.items.count == 1 && joined[.identifier]?.count == 256)
    }

    @Test func truncatedAndOversizedInputIsATypedError() {
        #expect(throws: HAPError.self) { try TLV8(decoding: [0x06]) }
        #expect(throws: HAPError.self) { try TLV8(decoding: [0x06, 5, 1, 2]) }
        #expect(throws: HAPError.self) { try TLV8(decoding: [UInt8](repeating: 0, count: TLV8.maximumLength + 1)) }
        #expect((try? TLV8(decoding: []))?.items.isEmpty == true)
        #expect((try? TLV8(decoding: [0x07, 0]))?.items.count == 1)
    }
}
