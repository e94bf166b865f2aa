#if canImport(Glibc)
import Glibc
#endif

/// A message body as it came off the wire (see ``DBusWireReader/decodeHeader(_:limit:strings:)``).
/// It reads the message's bytes: use it only while they are valid (in a
/// ``DBusSignalConnection`` raw handler, during the call).
public struct DBusWireBody {
    let cursor: DBusWireReader.Cursor
    let signatureBytes: DBusWireReader.Signature

    init(cursor: DBusWireReader.Cursor, signature: DBusWireReader.Signature) {
        self.cursor = cursor
        signatureBytes = signature
    }

    /// The body's signature, e.g. `oa{sa{sv}}`.
    public var signature: String { String(decoding: signatureBytes, as: UTF8.self) }

    /// Whether the signature is exactly `text` (no string made).
    public func hasSignature(_ text: StaticString) -> Bool {
        text.withUTF8Buffer { expected in signatureBytes.elementsEqual(expected) }
    }

    /// Every value, as `DBusMessage.body` holds them.
    public func values() throws(DBusWireError) -> [DBusValue] {
        var cursor = self.cursor
        var body: [DBusValue] = []
        var rest = signatureBytes
        while !rest.isEmpty {
            let typeEnd = try DBusWireReader.completeTypeEnd(rest, arrayDepth: 0, structDepth: 0, offset: cursor.offset)
            body.append(try cursor.value(rest[rest.startIndex..<typeEnd], depth: 0))
            rest = rest[typeEnd...]
        }
        try Self.checkEnd(cursor)
        return body
    }

    /// Reads the body with `reader`, which must follow the signature (check it
    /// first) and read all of it; every value is checked as ``values()`` would.
    public func read<T>(_ reader: (inout DBusBodyReader) throws(DBusWireError) -> T) throws(DBusWireError) -> T {
        var body = DBusBodyReader(cursor: cursor)
        let result = try reader(&body)
        try Self.checkEnd(body.cursor)
        return result
    }

    private static func checkEnd(_ cursor: DBusWireReader.Cursor) throws(DBusWireError) {
        guard cursor.offset == cursor.bytes.count else {
            throw DBusWireError(reason: "\(cursor.bytes.count - cursor.offset) bytes after the body", offset: cursor.offset)
        }
    }
}
