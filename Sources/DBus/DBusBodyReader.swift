#if canImport(Glibc)
import Glibc
#endif

/// Reads a body of a known signature value by value, for callers that turn it
/// straight into their own types (BlueZ's `InterfacesAdded`) rather than a
/// `DBusValue` tree. The same checks as ``DBusWireReader``.
public struct DBusBodyReader {
    var cursor: DBusWireReader.Cursor

    public mutating func string() throws(DBusWireError) -> String { try cursor.string() }
    public mutating func objectPath() throws(DBusWireError) -> DBusObjectPath { try cursor.objectPath() }

    /// A variant's value, unwrapped (no box for it).
    public mutating func variant() throws(DBusWireError) -> DBusValue {
        try cursor.value(try cursor.variantSignature(), depth: 8)
    }

    /// A variant's value, unwrapped; a container other than an array of
    /// strings is checked as ``variant()`` checks it but kept as its wire bytes
    /// (one allocation instead of a box per level and an array per container),
    /// decoded when read. For properties most readers never look at, such as
    /// a Bluetooth device's advertising data.
    public mutating func variantKeepingContainers() throws(DBusWireError) -> DBusKeptValue {
        let signature = try cursor.variantSignature()
        let code = signature[signature.startIndex]
        let isContainer = code == UInt8(ascii: "a") || code == UInt8(ascii: "(") || code == UInt8(ascii: "v")
        let isStrings = signature.count == 2 && code == UInt8(ascii: "a") && signature[signature.startIndex + 1] == UInt8(ascii: "s")
        guard isContainer, !isStrings else { return .decoded(try cursor.value(signature, depth: 8)) }
        let start = cursor.offset
        _ = try cursor.value(signature, depth: 8, build: false)
        return .kept(DBusWireValue(
            message: cursor.bytes, range: start..<cursor.offset, signature: signature, bigEndian: cursor.bigEndian, depth: 8))
    }

    /// The entries of a dictionary (`a{...}`): `entry` reads each key and value.
    public mutating func dictionary(_ entry: (inout DBusBodyReader) throws(DBusWireError) -> Void) throws(DBusWireError) {
        let arrayEnd = try cursor.arrayEnd(elementAlignment: 8)
        let outerEnd = cursor.end
        cursor.end = arrayEnd
        while cursor.offset < arrayEnd {
            try cursor.align(8)
            try entry(&self)
        }
        cursor.end = outerEnd
    }
}
