/// The namespaces of the Cast channel MediaRoute speaks, and the ids of its two fixed ends.
public enum CastNamespace {
    /// Virtual connections: `CONNECT` and `CLOSE`, one per (sender, destination) pair.
    public static let connection = "urn:x-cast:com.google.cast.tp.connection"
    /// `PING` and `PONG`, both ways.
    public static let heartbeat = "urn:x-cast:com.google.cast.tp.heartbeat"
    /// The receiver itself: status, launching and stopping applications, volume.
    public static let receiver = "urn:x-cast:com.google.cast.receiver"
    /// A media application's player: load, play, pause, seek, stop, queue, status.
    public static let media = "urn:x-cast:com.google.cast.media"

    /// The platform sender id every sender uses for the receiver namespace.
    public static let platformSender = "sender-0"
    /// The receiver's own end.
    public static let platformReceiver = "receiver-0"
    /// The Default Media Receiver: plays a URL with its own player.
    public static let defaultMediaReceiver = "CC1AD845"

    /// Whether `name` can be an application's own namespace: `urn:x-cast:` and at most 128
    /// printable ASCII characters, none of the platform's.
    public static func isApplicationNamespace(_ name: String) -> Bool {
        name.hasPrefix("urn:x-cast:") && name.utf8.count <= 128 && name.utf8.count > 11
            && name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
            && ![connection, heartbeat, receiver].contains(name)
            && !name.hasPrefix("urn:x-cast:com.google.cast.tp.")
    }

    /// Whether `appID` looks like a Cast application id (8 upper-case hex digits, as the
    /// console gives them; some first-party ids are longer names, so letters, digits and
    /// `_-.` up to 64 are taken).
    public static func isApplicationID(_ appID: String) -> Bool {
        !appID.isEmpty && appID.utf8.count <= 64
            && appID.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x2D || $0 == 0x2E }
    }
}
