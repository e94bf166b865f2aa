/// Something a protocol pinned about a device the first time it was used, so that the
/// device it reaches later is the same one: a Cast receiver's certificate, the host an
/// AirPlay receiver answered from, a household box that answered the household key.
///
/// `mediaroutectl trust list | forget NAME | accept NAME` (`Manager1.ListTrust`,
/// `ForgetTrust`, `AcceptTrust`) show and manage them.
public struct PinnedIdentity: Sendable, Hashable {
    /// What was pinned.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A Google Cast receiver's TLS certificate (its SHA-256, short form).
        case castCertificate = "cast-certificate"
        /// The host an AirPlay receiver was first used at.
        case airPlayHost = "airplay-host"
        /// A password an AirPlay receiver accepted (kept in memory, for that host only).
        case airPlayPassword = "airplay-password"
        /// An AirPlay 2 receiver paired with its PIN: its pairing identifier and key, kept under the state directory.
        case airPlayPairing = "airplay-pairing"
        /// Another box of the household that answered a challenge sealed with the household key.
        case householdBox = "household-box"
    }

    public var kind: Kind
    /// The device's id (`cast:…`, `raop:…`, a box's id).
    public var deviceID: String
    /// Its name when it was pinned (or as it is now, when present).
    public var name: String
    /// What is pinned, in the form people compare (a short fingerprint, a host).
    public var pinned: String
    /// Another identity the device presented since, refused until someone accepts it
    /// (`trust accept NAME`, or confirming the prompt when the device is activated).
    public var offered: String?

    public init(kind: Kind, deviceID: String, name: String, pinned: String, offered: String? = nil) {
        self.kind = kind
        self.deviceID = deviceID
        self.name = name
        self.pinned = pinned
        self.offered = offered
    }

    /// Whether `name` names this entry: its device id, or its name, ignoring case.
    public func isNamed(_ name: String) -> Bool {
        deviceID == name || self.name.lowercased() == name.lowercased()
    }
}
