/// HAP's type-length-value encoding: one byte of type, one of length, the value; a value
/// longer than 255 bytes goes as consecutive items of the same type, which a reader joins.
/// Pairing messages are lists of these (``Tag``).
public struct TLV8: Sendable, Hashable {
    /// The item types pairing uses (HAP's kTLVType_…).
    public enum Tag: UInt8, Sendable {
        case method = 0x00
        case identifier = 0x01
        case salt = 0x02
        case publicKey = 0x03
        case proof = 0x04
        case encryptedData = 0x05
        case state = 0x06
        case error = 0x07
        case retryDelay = 0x08
        case certificate = 0x09
        case signature = 0x0A
        case permissions = 0x0B
        case fragmentData = 0x0C
        case fragmentLast = 0x0D
        case flags = 0x13
        case separator = 0xFF
    }

    /// The items in order, each value whole (fragments joined, separators dropped).
    public private(set) var items: [(type: UInt8, value: [UInt8])]

    /// The most bytes a message may have: pairing messages are a few hundred bytes (an SRP
    /// public key is 384); a receiver cannot make us hold more.
    public static let maximumLength = 16 * 1024

    public init(_ items: [(Tag, [UInt8])] = []) {
        self.items = items.map { ($0.0.rawValue, $0.1) }
    }

    /// Decodes `bytes`; throws `.malformed` for a truncated item or a message over ``maximumLength``.
    public init(decoding bytes: [UInt8]) throws(HAPError) {
        guard bytes.count <= Self.maximumLength else { throw HAPError(.malformed, "a TLV8 message of \(bytes.count) bytes (at most \(Self.maximumLength))") }
        items = []
        var index = 0
        var previousWasFull = false
        while index < bytes.count {
            guard bytes.count - index >= 2 else { throw HAPError(.malformed, "a TLV8 item cut after its type at byte \(index)") }
            let type = bytes[index]
            let length = Int(bytes[index + 1])
            guard bytes.count - index - 2 >= length else {
                throw HAPError(.malformed, "a TLV8 item of type \(type) says \(length) bytes, \(bytes.count - index - 2) remain")
            }
            let value = Array(bytes[(index + 2)..<(index + 2 + length)])
            // A separator only delimits two items of one type: it is not kept.
            if type == Tag.separator.rawValue {
                previousWasFull = false
                index += 2 + length
                continue
            }
            // A 255-byte item followed by one of the same type continues it.
            if previousWasFull, let last = items.last, last.type == type {
                items[items.count - 1].value += value
            } else {
                items.append((type, value))
            }
            previousWasFull = length == 255
            index += 2 + length
        }
    }

    /// A receiver's answer at step `state` of `exchange` ("pair-setup", "pair-verify"): decoded,
    /// a refusal thrown as `.refused(code)`, another state as `.malformed`.
    static func answer(_ body: [UInt8], exchange: String, state: UInt8) throws(HAPError) -> TLV8 {
        let message = try TLV8(decoding: body)
        if let code = message.byte(.error) {
            throw HAPError(.refused(code), "the receiver refused \(exchange) at step \(state): \(ReceiverRefusal(code))")
        }
        guard message.byte(.state) == state else {
            throw HAPError(.malformed, "\(exchange) expected state \(state), the receiver sent \(message.byte(.state).map(String.init) ?? "none")")
        }
        return message
    }

    /// The first item of `tag`, or nil.
    public subscript(tag: Tag) -> [UInt8]? {
        items.first { $0.type == tag.rawValue }?.value
    }

    /// The value of `tag` as one byte (state, method, error), or nil when absent or longer.
    public func byte(_ tag: Tag) -> UInt8? {
        guard let value = self[tag], value.count == 1 else { return nil }
        return value[0]
    }

    public mutating func append(_ tag: Tag, _ value: [UInt8]) {
        items.append((tag.rawValue, value))
    }

    /// The encoded bytes; two items of the same type in a row get a separator between them.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        var previous: UInt8?
        for (type, value) in items {
            if previous == type { out += [Tag.separator.rawValue, 0] }
            if value.isEmpty { out += [type, 0] }
            var offset = 0
            while offset < value.count {
                let count = min(255, value.count - offset)
                out += [type, UInt8(count)]
                out += value[offset..<(offset + count)]
                offset += count
            }
            previous = type
        }
        return out
    }

    public static func == (lhs: TLV8, rhs: TLV8) -> Bool {
        lhs.items.count == rhs.items.count && zip(lhs.items, rhs.items).allSatisfy { $0.type == $1.type && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for (type, value) in items {
            hasher.combine(type)
            hasher.combine(value)
        }
    }
}
