#if canImport(Glibc)
import Glibc
#endif

/// A value read by ``DBusBodyReader/variantKeepingContainers()``.
public enum DBusKeptValue: Sendable {
    case decoded(DBusValue)
    case kept(DBusWireValue)

    public var value: DBusValue {
        switch self {
        case .decoded(let value): value
        case .kept(let wire): wire.value
        }
    }
}
