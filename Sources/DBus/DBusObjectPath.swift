#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus object path, e.g. `/org/bluez/hci0`.
public struct DBusObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    /// A path; nil when it is not a valid object path.
    public init?(_ rawValue: String) {
        guard Self.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        precondition(Self.isValid(value), "invalid object path literal \(value)")
        rawValue = value
    }

    /// A path already validated (by libdbus or ``DBusWireReader``, which check every incoming message).
    init(validated rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `/` or `/`-separated non-empty elements of `[A-Za-z0-9_]`, no trailing `/`.
    public static func isValid(_ path: String) -> Bool { isValid(utf8: path.utf8) }

    /// The same check on UTF-8 bytes (the wire reader's, before any string is made).
    static func isValid<Bytes: Collection<UInt8>>(utf8 bytes: Bytes) -> Bool {
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var previousWasSlash = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                let allowed = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
                if !allowed { return false }
                previousWasSlash = false
            }
        }
        return !previousWasSlash
    }

    /// Whether `self` is `ancestor` or below it.
    public func isDescendant(of ancestor: DBusObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return true }
        let path = rawValue.utf8
        let prefix = ancestor.rawValue.utf8
        guard path.count >= prefix.count, path.starts(with: prefix) else { return false }
        return path.count == prefix.count || path[path.index(path.startIndex, offsetBy: prefix.count)] == UInt8(ascii: "/")
    }

    /// A child path with one more element (characters outside `[A-Za-z0-9_]` become `_`).
    public func appending(_ element: String) -> DBusObjectPath {
        let safe = String(element.utf8.map { byte -> Character in
            let ok = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            return ok ? Character(UnicodeScalar(byte)) : "_"
        })
        let base = rawValue == "/" ? "" : rawValue
        return DBusObjectPath(base + "/" + (safe.isEmpty ? "_" : safe))!
    }
}
