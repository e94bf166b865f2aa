public import DBus

/// An error BlueZ answered a call with, typed from its D-Bus error name
/// (`org.bluez.Error.*`, doc/org.bluez.*.rst) and, where BlueZ gives the reason only
/// in the message text (a failed LE connection's `le-connection-abort-by-local`, a
/// GATT operation's `ATT error: 0x80`), from that text, parsed once here.
public struct BlueZError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The documented `org.bluez.Error.*` names MediaRoute meets.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case failed = "Failed"
        case inProgress = "InProgress"
        case alreadyExists = "AlreadyExists"
        case alreadyConnected = "AlreadyConnected"
        case doesNotExist = "DoesNotExist"
        case notReady = "NotReady"
        case notConnected = "NotConnected"
        case notAvailable = "NotAvailable"
        case notSupported = "NotSupported"
        case notPermitted = "NotPermitted"
        case notAuthorized = "NotAuthorized"
        case invalidArguments = "InvalidArguments"
        case invalidValueLength = "InvalidValueLength"
        case invalidOffset = "InvalidOffset"
        case authenticationFailed = "AuthenticationFailed"
        case authenticationCanceled = "AuthenticationCanceled"
        case authenticationRejected = "AuthenticationRejected"
        case authenticationTimeout = "AuthenticationTimeout"
        case connectionAttemptFailed = "ConnectionAttemptFailed"
        /// Not an `org.bluez.Error` name: the bus's own (no reply, BlueZ gone) or another service's.
        case other
    }

    public static let namePrefix = "org.bluez.Error."

    public let kind: Kind
    /// The D-Bus error name as received.
    public let name: String
    public let message: String

    public init(_ error: DBusError) {
        name = error.name
        message = error.message
        if error.name.hasPrefix(Self.namePrefix) {
            kind = Kind(rawValue: String(error.name.dropFirst(Self.namePrefix.count))) ?? .other
        } else {
            kind = .other
        }
    }

    /// A failure of our own making (a reply BlueZ should not have sent), as `Failed`.
    public init(failed message: String) {
        self.init(DBusError(name: Self.namePrefix + Kind.failed.rawValue, message: message))
    }

    /// Why BlueZ says a connection attempt failed, when it says so: the message of a
    /// `Failed` from `Device1.Connect` is one of its reason words
    /// (`le-connection-abort-by-local`, `br-connection-page-timeout`, …).
    public var connectionFailureReason: String? {
        guard kind == .failed, let word = message.split(separator: " ", maxSplits: 1).first else { return nil }
        let prefixes = ["le-connection-", "br-connection-"]
        guard prefixes.contains(where: { word.hasPrefix($0) && word.count > $0.count }) else { return nil }
        return String(word)
    }

    /// The LE link was torn down by our side while connecting: BlueZ's transient
    /// failure, worth another attempt.
    public var isLocalConnectionAbort: Bool { connectionFailureReason == "le-connection-abort-by-local" }

    /// The ATT error code of a failed GATT read or write (`… ATT error: 0x80`):
    /// application errors (0x80–0x9F) are the profile's own, e.g. VCS's
    /// "invalid change counter".
    public var attErrorCode: UInt8? {
        guard let range = message.firstRange(of: "ATT error: 0x") else { return nil }
        let digits = message[range.upperBound...].prefix { $0.isHexDigit }
        guard digits.count == 2 else { return nil }
        return UInt8(digits, radix: 16)
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }
}
