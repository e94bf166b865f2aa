#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus value of any type, with its signature.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(String)
    case unixFD(DBusFileDescriptor)
    /// An array of values of one type; `elementSignature` is needed when it is empty.
    indirect case array(elementSignature: String, [DBusValue])
    /// A dictionary `a{kv}`.
    indirect case dictionary(keySignature: String, valueSignature: String, [DBusDictEntry])
    indirect case structure([DBusValue])
    indirect case variant(DBusValue)

    /// The value's D-Bus type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    // MARK: Building

    /// An `a{sv}` dictionary, the property bag of BlueZ and MPRIS, sorted by key.
    public static func properties(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(
            keySignature: "s", valueSignature: "v",
            values.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .variant($0.value)) })
    }

    /// An `as` array.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(elementSignature: "s", values.map(DBusValue.string))
    }

    /// An `ay` array.
    public static func bytes(_ values: [UInt8]) -> DBusValue {
        .array(elementSignature: "y", values.map(DBusValue.byte))
    }

    /// The zero value of a complete type: "" for strings, "/" for object paths, 0, false,
    /// empty containers; a variant holds an empty string. Nil for a malformed signature.
    public static func zero(of signature: String) -> DBusValue? {
        var codes = Substring(signature)
        guard let value = zero(parsing: &codes), codes.isEmpty else { return nil }
        return value
    }

    private static func zero(parsing codes: inout Substring) -> DBusValue? {
        guard let code = codes.popFirst() else { return nil }
        switch code {
        case "y": return .byte(0)
        case "b": return .bool(false)
        case "n": return .int16(0)
        case "q": return .uint16(0)
        case "i": return .int32(0)
        case "u": return .uint32(0)
        case "x": return .int64(0)
        case "t": return .uint64(0)
        case "d": return .double(0)
        case "s": return .string("")
        case "o": return .objectPath("/")
        case "g": return .signature("")
        case "v": return .variant(.string(""))
        case "a":
            /// The signature of one complete type, taken from the front of `codes`.
            func complete() -> String? {
                let before = codes
                guard zero(parsing: &codes) != nil else { return nil }
                return String(before.prefix(before.count - codes.count))
            }
            if codes.first == "{" {
                codes.removeFirst()
                guard let key = complete(), let value = complete(), codes.popFirst() == "}" else { return nil }
                return .dictionary(keySignature: key, valueSignature: value, [])
            }
            return complete().map { .array(elementSignature: $0, []) }
        case "(":
            var fields: [DBusValue] = []
            while codes.first != ")" {
                guard let field = zero(parsing: &codes) else { return nil }
                fields.append(field)
            }
            codes.removeFirst()
            return fields.isEmpty ? nil : .structure(fields)
        default:
            return nil
        }
    }

    // MARK: Reading

    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        switch unwrapped {
        case .string(let value), .signature(let value): value
        case .objectPath(let path): path.rawValue
        default: nil
        }
    }

    public var bool: Bool? { if case .bool(let v) = unwrapped { v } else { nil } }
    public var double: Double? { if case .double(let v) = unwrapped { v } else { nil } }
    public var objectPath: DBusObjectPath? { if case .objectPath(let v) = unwrapped { v } else { nil } }

    /// Any integer type as Int64 (uint64 values above Int64.max give nil).
    public var integer: Int64? {
        switch unwrapped {
        case .byte(let v): Int64(v)
        case .int16(let v): Int64(v)
        case .uint16(let v): Int64(v)
        case .int32(let v): Int64(v)
        case .uint32(let v): Int64(v)
        case .int64(let v): v
        case .uint64(let v): Int64(exactly: v)
        default: nil
        }
    }

    public var array: [DBusValue]? {
        switch unwrapped {
        case .array(_, let values): values
        case .dictionary(_, _, let entries): entries.map { .structure([$0.key, $0.value]) }
        default: nil
        }
    }

    public var bytes: [UInt8]? {
        guard case .array("y", let values) = unwrapped else { return nil }
        return values.compactMap { if case .byte(let b) = $0 { b } else { nil } }
    }

    /// A dictionary with string-like keys (`a{sv}`, `a{oa{sv}}`, …) as a Swift dictionary.
    public var dictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result = [String: DBusValue](minimumCapacity: entries.count)
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value
        }
        return result
    }
}

/// Splits a signature into its complete types ("a{sv}i(ss)" → ["a{sv}", "i", "(ss)"]);
/// nil when it is malformed (the grammar and limits ``DBusWireReader`` checks).
public func dbusSplitSignature(_ signature: String) -> [String]? {
    Array(signature.utf8).withUnsafeBytes { raw -> [String]? in
        var result: [String] = []
        var rest = raw[...]
        while !rest.isEmpty {
            guard let end = try? DBusWireReader.completeTypeEnd(rest, arrayDepth: 0, structDepth: 0, offset: 0) else { return nil }
            result.append(String(decoding: rest[rest.startIndex..<end], as: UTF8.self))
            rest = rest[end...]
        }
        return result
    }
}
