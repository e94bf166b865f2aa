#if canImport(Glibc)
import Glibc
#endif

/// A unix file descriptor carried in a message (`h`). The value owns its
/// descriptor and closes it when the last reference goes; use ``duplicate()``
/// to keep one beyond that.
public final class DBusFileDescriptor: Sendable, Hashable {
    /// The descriptor number; valid while this object lives.
    public let rawValue: Int32

    /// Takes ownership of `rawValue`.
    public init(owning rawValue: Int32) {
        self.rawValue = rawValue
    }

    deinit {
        close(rawValue)
    }

    /// A new descriptor for the same file, owned by the caller.
    public func duplicate() -> Int32 { dup(rawValue) }

    public static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
