#if canImport(Glibc)
import Glibc
#endif

/// Reads D-Bus messages from their wire bytes, as the D-Bus specification
/// marshals them, into ``DBusMessage`` values.
///
/// Why this exists next to libdbus: ``DBusSignalConnection`` receives BlueZ's
/// object-manager stream with it, where libdbus's own loader cost three times
/// what reading the socket did (see Docs/benchmarks.md). It checks what a
/// receiver must not trust: every length against the bytes there are and
/// against ``maximumMessageSize``, alignment padding being zero, signatures
/// (grammar, 255 bytes, 32 levels of arrays and of structures), nesting depth,
/// booleans, strings (UTF-8, no NUL, terminated), object paths, header field
/// types and the fields each message type requires. Unix file descriptors are
/// refused: the connection reading with it does not negotiate them.
public enum DBusWireReader {
    /// Signatures are read where they lie in the message: no copies.
    typealias Signature = Slice<UnsafeRawBufferPointer>

    /// The bus daemon's own limit on the system bus.
    public static let maximumMessageSize = 32 << 20
    /// The specification's limit on an array's length in bytes.
    static let maximumArrayLength = 64 << 20
    /// The specification's limit on container nesting in a value.
    static let maximumDepth = 64

    /// The length of the whole message whose first 16 bytes are `fixedHeader`.
    /// - Throws: ``DBusWireError`` when those bytes cannot start a message or it would exceed `limit`.
    public static func messageLength(fixedHeader: UnsafeRawBufferPointer, limit: Int = maximumMessageSize) throws(DBusWireError) -> Int {
        guard fixedHeader.count >= 16 else { throw DBusWireError(reason: "fewer than 16 bytes", offset: fixedHeader.count) }
        let bigEndian: Bool
        switch fixedHeader[0] {
        case UInt8(ascii: "l"): bigEndian = false
        case UInt8(ascii: "B"): bigEndian = true
        default: throw DBusWireError(reason: "unknown byte order \(fixedHeader[0])", offset: 0)
        }
        guard fixedHeader[3] == 1 else { throw DBusWireError(reason: "protocol version \(fixedHeader[3])", offset: 3) }
        let bodyLength = Int(load32(fixedHeader, 4, bigEndian))
        let fieldsLength = Int(load32(fixedHeader, 12, bigEndian))
        guard bodyLength <= limit, fieldsLength <= limit else { throw DBusWireError(reason: "larger than \(limit) bytes", offset: 4) }
        let total = align(16 + fieldsLength, 8) + bodyLength
        guard total <= limit else { throw DBusWireError(reason: "larger than \(limit) bytes", offset: 4) }
        return total
    }

    /// The message in `bytes` (exactly one whole message); nil for a message
    /// type this version of the protocol does not know (receivers ignore those).
    /// - Parameter strings: shares strings that recur from message to message.
    public static func decode(
        _ bytes: UnsafeRawBufferPointer, limit: Int = maximumMessageSize, strings: DBusStringTable? = nil
    ) throws(DBusWireError) -> DBusMessage? {
        guard let (header, body) = try decodeHeader(bytes, limit: limit, strings: strings) else { return nil }
        var message = header
        message.body = try body.values()
        return message
    }

    /// The message's header fields (its `body` left empty) and its body, still
    /// on the wire, to be read with ``DBusWireBody/values()`` or, for a known
    /// signature, ``DBusWireBody/read(_:)`` without building a `DBusValue` tree.
    /// The body reads `bytes`, which must stay valid while it is used.
    public static func decodeHeader(
        _ bytes: UnsafeRawBufferPointer, limit: Int = maximumMessageSize, strings: DBusStringTable? = nil
    ) throws(DBusWireError) -> (DBusMessage, DBusWireBody)? {
        let length = try messageLength(fixedHeader: bytes, limit: limit)
        guard length == bytes.count else {
            throw DBusWireError(reason: "\(bytes.count) bytes for a message of \(length)", offset: 0)
        }
        var cursor = Cursor(bytes: bytes, bigEndian: bytes[0] == UInt8(ascii: "B"), strings: strings)
        cursor.offset = 1
        let type = try cursor.byte()
        let flags = try cursor.byte()
        cursor.offset = 8
        let serial = try cursor.uint32()
        guard serial != 0 else { throw DBusWireError(reason: "serial 0", offset: 8) }

        var message: DBusMessage
        switch type {
        case 1: message = DBusMessage(kind: .methodCall)
        case 2: message = DBusMessage(kind: .methodReturn)
        case 3: message = DBusMessage(kind: .error)
        case 4: message = DBusMessage(kind: .signal)
        case 0: throw DBusWireError(reason: "message type 0", offset: 1)
        default: return nil
        }
        message.serial = serial
        message.noReplyExpected = flags & 0x1 != 0

        // Header fields: a(yv), each a code and a variant of the type the code requires.
        var signature = bytes[0..<0]
        cursor.offset = 12
        let fieldsEnd = try cursor.arrayEnd(elementAlignment: 8)
        cursor.end = fieldsEnd
        while cursor.offset < fieldsEnd {
            try cursor.align(8)
            let codeOffset = cursor.offset
            let code = try cursor.byte()
            // A header field's value is a variant: exactly one complete type (an empty or
            // multi-type signature here once reached `value` with nothing to index).
            let valueSignature = try cursor.variantSignature()
            func expect(_ type: UInt8) throws(DBusWireError) {
                guard valueSignature.count == 1, valueSignature.first == type else {
                    throw DBusWireError(reason: "header field \(code) is not of type \(Character(UnicodeScalar(type)))", offset: codeOffset)
                }
            }
            switch code {
            case 1:
                try expect(UInt8(ascii: "o"))
                message.path = try cursor.objectPath()
            case 2:
                try expect(UInt8(ascii: "s"))
                message.interface = try cursor.string()
            case 3:
                try expect(UInt8(ascii: "s"))
                message.member = try cursor.string()
            case 4:
                try expect(UInt8(ascii: "s"))
                message.errorName = try cursor.string()
            case 5:
                try expect(UInt8(ascii: "u"))
                message.replySerial = try cursor.uint32()
            case 6:
                try expect(UInt8(ascii: "s"))
                message.destination = try cursor.string()
            case 7:
                try expect(UInt8(ascii: "s"))
                message.sender = try cursor.string()
            case 8:
                try expect(UInt8(ascii: "g"))
                signature = try cursor.signatureBytes()
            case 9:
                try expect(UInt8(ascii: "u"))
                if try cursor.uint32() != 0 { throw DBusWireError(reason: "file descriptors were not negotiated", offset: codeOffset) }
            case 0:
                throw DBusWireError(reason: "header field code 0", offset: codeOffset)
            default:
                // Unknown fields are skipped, as the specification asks.
                _ = try cursor.value(valueSignature, depth: 1)
            }
        }
        cursor.end = bytes.count
        try cursor.align(8)
        try requireFields(of: message)

        return (message, DBusWireBody(cursor: cursor, signature: signature))
    }

    private static func requireFields(of message: DBusMessage) throws(DBusWireError) {
        let missing: String? =
            switch message.kind {
            case .methodCall: message.path == nil ? "PATH" : message.member == nil ? "MEMBER" : nil
            case .signal: message.path == nil ? "PATH" : message.interface == nil ? "INTERFACE" : message.member == nil ? "MEMBER" : nil
            case .methodReturn: message.replySerial == 0 ? "REPLY_SERIAL" : nil
            case .error: message.replySerial == 0 ? "REPLY_SERIAL" : message.errorName == nil ? "ERROR_NAME" : nil
            }
        if let missing { throw DBusWireError(reason: "no \(missing) header field", offset: 12) }
    }

    // MARK: Signatures

    /// Where the complete type starting `signature` ends; checks its grammar and nesting.
    static func completeTypeEnd(_ signature: Signature, arrayDepth: Int, structDepth: Int, offset: Int) throws(DBusWireError) -> Int {
        var index = signature.startIndex
        guard index < signature.endIndex else { throw DBusWireError(reason: "signature ends inside a type", offset: offset) }
        let code = signature[index]
        index += 1
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"), UInt8(ascii: "u"),
            UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"),
            UInt8(ascii: "h"), UInt8(ascii: "v"):
            return index
        case UInt8(ascii: "a"):
            guard arrayDepth < 32 else { throw DBusWireError(reason: "arrays nested deeper than 32", offset: offset) }
            if index < signature.endIndex, signature[index] == UInt8(ascii: "{") {
                index += 1
                guard index < signature.endIndex, isBasic(signature[index]) else {
                    throw DBusWireError(reason: "dictionary key is not a basic type", offset: offset)
                }
                index += 1
                index = try completeTypeEnd(signature[index...], arrayDepth: arrayDepth + 1, structDepth: structDepth + 1, offset: offset)
                guard index < signature.endIndex, signature[index] == UInt8(ascii: "}") else {
                    throw DBusWireError(reason: "dictionary entry is not one key and one value", offset: offset)
                }
                guard structDepth < 32 else { throw DBusWireError(reason: "structures nested deeper than 32", offset: offset) }
                return index + 1
            }
            return try completeTypeEnd(signature[index...], arrayDepth: arrayDepth + 1, structDepth: structDepth, offset: offset)
        case UInt8(ascii: "("):
            guard structDepth < 32 else { throw DBusWireError(reason: "structures nested deeper than 32", offset: offset) }
            var fields = 0
            while index < signature.endIndex, signature[index] != UInt8(ascii: ")") {
                index = try completeTypeEnd(signature[index...], arrayDepth: arrayDepth, structDepth: structDepth + 1, offset: offset)
                fields += 1
            }
            guard index < signature.endIndex, fields > 0 else { throw DBusWireError(reason: "empty or unclosed structure", offset: offset) }
            return index + 1
        default:
            throw DBusWireError(reason: "invalid type code \(code) in a signature", offset: offset)
        }
    }

    static func isBasic(_ code: UInt8) -> Bool {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"), UInt8(ascii: "u"),
            UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"),
            UInt8(ascii: "h"):
            true
        default: false
        }
    }

    static func alignment(of code: UInt8) -> Int {
        switch code {
        case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): 1
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
        default: 4
        }
    }

    static func align(_ offset: Int, _ alignment: Int) -> Int { (offset + alignment - 1) & ~(alignment - 1) }

    static func load32(_ bytes: UnsafeRawBufferPointer, _ offset: Int, _ bigEndian: Bool) -> UInt32 {
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
    }

    // MARK: Values

    /// A position in one message; offsets count from the message's first byte,
    /// which is what alignment is relative to.
    struct Cursor {
        let bytes: UnsafeRawBufferPointer
        let bigEndian: Bool
        let strings: DBusStringTable?
        var offset = 0
        var end: Int

        init(bytes: UnsafeRawBufferPointer, bigEndian: Bool, strings: DBusStringTable?) {
            self.bytes = bytes
            self.bigEndian = bigEndian
            self.strings = strings
            end = bytes.count
        }

        func failure(_ reason: String) -> DBusWireError { DBusWireError(reason: reason, offset: offset) }

        mutating func align(_ alignment: Int) throws(DBusWireError) {
            let padded = DBusWireReader.align(offset, alignment)
            guard padded <= end else { throw failure("truncated in padding") }
            while offset < padded {
                guard bytes[offset] == 0 else { throw failure("non-zero padding") }
                offset += 1
            }
        }

        mutating func need(_ count: Int) throws(DBusWireError) {
            guard count <= end - offset else { throw failure("truncated") }
        }

        mutating func byte() throws(DBusWireError) -> UInt8 {
            try need(1)
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws(DBusWireError) -> T {
            try align(MemoryLayout<T>.size)
            try need(MemoryLayout<T>.size)
            let raw = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
            offset += MemoryLayout<T>.size
            return bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
        }

        mutating func uint32() throws(DBusWireError) -> UInt32 { try fixed(UInt32.self) }

        /// Bytes of `count` followed by a NUL, with no NUL inside.
        /// `count` bytes followed by a NUL, with no NUL inside; whether they are all ASCII.
        mutating func terminated(_ count: Int) throws(DBusWireError) -> (text: UnsafeRawBufferPointer, isASCII: Bool) {
            guard count < end - offset else { throw failure("string runs past the end") }
            let text = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
            guard bytes[offset + count] == 0 else { throw failure("string is not NUL-terminated") }
            let (hasNUL, isASCII) = Self.scan(text)
            if hasNUL { throw failure("string contains NUL") }
            offset += count + 1
            return (text, isASCII)
        }

        mutating func string() throws(DBusWireError) -> String {
            let length = Int(try uint32())
            let start = offset
            let (text, isASCII) = try terminated(length)
            if isASCII { return strings?.string(text) ?? String(decoding: text, as: UTF8.self) }
            // The stdlib's C-string reader validates (non-generic, fast); the NUL after the text ends it.
            guard let string = String(validatingCString: text.baseAddress!.assumingMemoryBound(to: CChar.self)) else {
                throw DBusWireError(reason: "string is not UTF-8", offset: start)
            }
            return string
        }

        /// Whether `text` holds a NUL, and whether it is all ASCII, in one pass of eight bytes at a time.
        static func scan(_ text: UnsafeRawBufferPointer) -> (hasNUL: Bool, isASCII: Bool) {
            let high: UInt64 = 0x8080_8080_8080_8080
            let ones: UInt64 = 0x0101_0101_0101_0101
            var highBits: UInt64 = 0
            var index = 0
            while index + 8 <= text.count {
                let word = text.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // A zero byte, the classic way: borrowing from it sets its high bit.
                if (word &- ones) & ~word & high != 0 { return (true, false) }
                highBits |= word & high
                index += 8
            }
            while index < text.count {
                let byte = text[index]
                if byte == 0 { return (true, false) }
                highBits |= UInt64(byte & 0x80)
                index += 1
            }
            return (false, highBits == 0)
        }

        mutating func objectPath() throws(DBusWireError) -> DBusObjectPath {
            let text = try objectPathBytes()
            return DBusObjectPath(validated: strings?.string(text) ?? String(decoding: text, as: UTF8.self))
        }

        /// An object path's bytes, checked.
        mutating func objectPathBytes() throws(DBusWireError) -> UnsafeRawBufferPointer {
            let length = Int(try uint32())
            let start = offset
            let text = try terminated(length).text
            guard DBusObjectPath.isValid(utf8: text) else { throw DBusWireError(reason: "invalid object path", offset: start) }
            return text
        }

        /// A string, checked as ``string()`` does, without making it (ASCII text needs no copy to check).
        mutating func skipString() throws(DBusWireError) {
            let length = Int(try uint32())
            let start = offset
            let (text, isASCII) = try terminated(length)
            guard !isASCII else { return }
            guard String(validatingCString: text.baseAddress!.assumingMemoryBound(to: CChar.self)) != nil else {
                throw DBusWireError(reason: "string is not UTF-8", offset: start)
            }
        }

        /// A signature's bytes, checked to be complete types only.
        mutating func signatureBytes() throws(DBusWireError) -> Signature {
            let length = Int(try byte())
            let start = offset
            _ = try terminated(length)
            let signature = bytes[start..<(start + length)]
            var index = start
            while index < signature.endIndex {
                index = try completeTypeEnd(signature[index...], arrayDepth: 0, structDepth: 0, offset: start)
            }
            return signature
        }

        /// A variant's signature: exactly one complete type.
        mutating func variantSignature() throws(DBusWireError) -> Signature {
            let length = Int(try byte())
            let start = offset
            _ = try terminated(length)
            let signature = bytes[start..<(start + length)]
            guard !signature.isEmpty, try completeTypeEnd(signature, arrayDepth: 0, structDepth: 0, offset: start) == signature.endIndex else {
                throw DBusWireError(reason: "variant signature is not one complete type", offset: start - 1)
            }
            return signature
        }

        /// Where an array's elements end, after its length and the padding before the first element.
        mutating func arrayEnd(elementAlignment: Int) throws(DBusWireError) -> Int {
            let length = Int(try uint32())
            guard length <= maximumArrayLength else { throw failure("array of \(length) bytes") }
            try align(elementAlignment)
            guard length <= end - offset else { throw failure("array runs past the end") }
            return offset + length
        }

        /// One value of the complete type `type` (already checked by ``completeTypeEnd``).
        /// With `build` false it is checked exactly the same way but nothing is
        /// made (the result is a placeholder): for values kept as wire bytes.
        mutating func value(_ type: Signature, depth: Int, build: Bool = true) throws(DBusWireError) -> DBusValue {
            let code = type[type.startIndex]
            if !build {
                switch code {
                case UInt8(ascii: "s"):
                    try skipString()
                    return .byte(0)
                case UInt8(ascii: "o"):
                    _ = try objectPathBytes()
                    return .byte(0)
                case UInt8(ascii: "g"):
                    _ = try signatureBytes()
                    return .byte(0)
                default:
                    break
                }
            }
            switch code {
            case UInt8(ascii: "y"): return .byte(try byte())
            case UInt8(ascii: "b"):
                switch try uint32() {
                case 0: return .bool(false)
                case 1: return .bool(true)
                default: throw DBusWireError(reason: "boolean other than 0 or 1", offset: offset - 4)
                }
            case UInt8(ascii: "n"): return .int16(try fixed(Int16.self))
            case UInt8(ascii: "q"): return .uint16(try fixed(UInt16.self))
            case UInt8(ascii: "i"): return .int32(try fixed(Int32.self))
            case UInt8(ascii: "u"): return .uint32(try uint32())
            case UInt8(ascii: "x"): return .int64(try fixed(Int64.self))
            case UInt8(ascii: "t"): return .uint64(try fixed(UInt64.self))
            case UInt8(ascii: "d"): return .double(Double(bitPattern: try fixed(UInt64.self)))
            case UInt8(ascii: "s"): return .string(try string())
            case UInt8(ascii: "o"): return .objectPath(try objectPath())
            case UInt8(ascii: "g"): return .signature(String(decoding: try signatureBytes(), as: UTF8.self))
            case UInt8(ascii: "h"): throw failure("file descriptors were not negotiated")
            case UInt8(ascii: "v"):
                guard depth < maximumDepth else { throw failure("values nested deeper than \(maximumDepth)") }
                let inner = try value(try variantSignature(), depth: depth + 1, build: build)
                return build ? .variant(inner) : inner
            case UInt8(ascii: "("):
                guard depth < maximumDepth else { throw failure("values nested deeper than \(maximumDepth)") }
                try align(8)
                var fields: [DBusValue] = []
                var index = type.startIndex + 1
                while type[index] != UInt8(ascii: ")") {
                    let fieldEnd = try completeTypeEnd(type[index...], arrayDepth: 0, structDepth: 0, offset: offset)
                    let field = try value(type[index..<fieldEnd], depth: depth + 1, build: build)
                    if build { fields.append(field) }
                    index = fieldEnd
                }
                return build ? .structure(fields) : .byte(0)
            default:
                return try array(type, depth: depth, build: build)
            }
        }

        private mutating func array(_ type: Signature, depth: Int, build: Bool) throws(DBusWireError) -> DBusValue {
            guard depth < maximumDepth else { throw failure("values nested deeper than \(maximumDepth)") }
            let element = type[(type.startIndex + 1)...]
            let elementCode = element[element.startIndex]
            let arrayEnd = try arrayEnd(elementAlignment: alignment(of: elementCode))
            let outerEnd = end
            end = arrayEnd
            defer { end = outerEnd }
            if elementCode == UInt8(ascii: "{") {
                let keyType = element[(element.startIndex + 1)..<(element.startIndex + 2)]
                let valueType = element[(element.startIndex + 2)..<(element.endIndex - 1)]
                var entries: [DBusDictEntry] = []
                while offset < arrayEnd {
                    try align(8)
                    let key = try value(keyType, depth: depth + 2, build: build)
                    let value = try value(valueType, depth: depth + 2, build: build)
                    if build { entries.append(DBusDictEntry(key, value)) }
                }
                guard build else { return .byte(0) }
                return .dictionary(
                    keySignature: String(decoding: keyType, as: UTF8.self), valueSignature: String(decoding: valueType, as: UTF8.self), entries)
            }
            var values: [DBusValue] = []
            if build, alignment(of: elementCode) == 1, elementCode == UInt8(ascii: "y") { values.reserveCapacity(arrayEnd - offset) }
            while offset < arrayEnd {
                let value = try value(element, depth: depth + 1, build: build)
                if build { values.append(value) }
            }
            guard build else { return .byte(0) }
            return .array(elementSignature: String(decoding: element, as: UTF8.self), values)
        }
    }
}
