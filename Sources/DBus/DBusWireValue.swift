#if canImport(Glibc)
import Glibc
#endif

/// A value kept as it came off the wire, already checked, decoded each time
/// ``value`` is read (see ``DBusBodyReader/variantKeepingContainers()``).
///
/// One array holds it all, so that a property kept this way costs one
/// allocation and eight bytes where it is stored: a header (signature length,
/// byte order, depth, padding), the signature, zeros up to a multiple of eight,
/// then `padding` zeros and the value, which puts it at the same offset modulo
/// eight as in its message (alignment counts from a message's start).
public struct DBusWireValue: Sendable, Hashable, CustomStringConvertible {
    private let storage: [UInt8]

    init(message: UnsafeRawBufferPointer, range: Range<Int>, signature: Slice<UnsafeRawBufferPointer>, bigEndian: Bool, depth: Int) {
        let valueBase = DBusWireReader.align(4 + signature.count, 8)
        let padding = range.lowerBound & 7
        storage = [UInt8](unsafeUninitializedCapacity: valueBase + padding + range.count) { buffer, count in
            buffer.initialize(repeating: 0)
            buffer[0] = UInt8(signature.count)
            buffer[1] = bigEndian ? 1 : 0
            buffer[2] = UInt8(depth)
            buffer[3] = UInt8(padding)
            UnsafeMutableRawBufferPointer(buffer).baseAddress!.advanced(by: 4).copyMemory(from: signature.base.baseAddress! + signature.startIndex, byteCount: signature.count)
            UnsafeMutableRawBufferPointer(buffer).baseAddress!.advanced(by: valueBase + padding).copyMemory(from: message.baseAddress! + range.lowerBound, byteCount: range.count)
            count = buffer.count
        }
    }

    private var signatureLength: Int { Int(storage[0]) }

    public var signature: String { String(decoding: storage[4..<(4 + signatureLength)], as: UTF8.self) }

    /// The value, decoded (it was checked when read, so this cannot fail).
    public var value: DBusValue {
        let decoded = storage.withUnsafeBytes { bytes -> DBusValue? in
            let signatureLength = Int(bytes[0])
            let valueBase = DBusWireReader.align(4 + signatureLength, 8)
            var cursor = DBusWireReader.Cursor(bytes: UnsafeRawBufferPointer(rebasing: bytes[valueBase...]), bigEndian: bytes[1] == 1, strings: nil)
            cursor.offset = Int(bytes[3])
            return try? cursor.value(bytes[4..<(4 + signatureLength)], depth: Int(bytes[2]))
        }
        guard let decoded else {
            assertionFailure("a checked value failed to decode")
            return .array(elementSignature: "y", [])
        }
        return decoded
    }

    public static func == (lhs: DBusWireValue, rhs: DBusWireValue) -> Bool { lhs.value == rhs.value }

    public func hash(into hasher: inout Hasher) { hasher.combine(value) }

    public var description: String { "\(value)" }
}
