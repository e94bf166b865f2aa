#if canImport(Glibc)
import Glibc
#endif

/// Why bytes are not a D-Bus message.
public struct DBusWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong, e.g. "string is not UTF-8".
    public let reason: String
    /// Byte offset from the start of the message where it was found.
    public let offset: Int

    public var description: String { "malformed D-Bus message at byte \(offset): \(reason)" }
}
