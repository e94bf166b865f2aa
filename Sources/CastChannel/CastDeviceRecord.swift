/// What a Cast receiver's DNS-SD TXT record (`_googlecast._tcp`) says of it.
public struct CastDeviceRecord: Sendable, Equatable {
    /// The `ca` bits.
    public struct Capabilities: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let videoOut = Capabilities(rawValue: 1 << 0)
        public static let videoIn = Capabilities(rawValue: 1 << 1)
        public static let audioOut = Capabilities(rawValue: 1 << 2)
        public static let audioIn = Capabilities(rawValue: 1 << 3)
        public static let developerMode = Capabilities(rawValue: 1 << 4)
        public static let multizoneGroup = Capabilities(rawValue: 1 << 5)
    }

    /// The receiver's id (`id`: 32 hex digits, the UUID of its DIAL/UPnP UDN without dashes).
    public var id: String
    /// `fn`: the name the person gave it.
    public var friendlyName: String
    /// `md`: the model ("Chromecast", "Google Nest Mini", "Google Cast Group").
    public var model: String
    public var capabilities: Capabilities
    /// `rs`: what it shows now (an application's status text), empty when idle.
    public var runningApplication: String
    /// `st`: 1 when an application is casting, 0 when idle.
    public var status: Int?
    /// `ve`: the protocol version.
    public var version: String?

    /// The record from TXT pairs; nil without an `id`.
    public init?(txt: [String: String]) {
        guard let id = txt["id"]?.lowercased(), !id.isEmpty, id.utf8.count <= 64 else { return nil }
        self.id = id
        let name = txt["fn"].map(Self.trimmed) ?? ""
        self.friendlyName = name.isEmpty ? "Cast device \(id.prefix(6))" : String(name.prefix(128))
        self.model = String((txt["md"] ?? "").prefix(128))
        // A value over a plain Int is no capability set anyone sends: treated as none.
        self.capabilities = Capabilities(rawValue: txt["ca"].flatMap { Int($0) }.map { $0 & 0xFFFF } ?? 0)
        self.runningApplication = String((txt["rs"] ?? "").prefix(128))
        self.status = txt["st"].flatMap { Int($0) }
        self.version = txt["ve"].map { String($0.prefix(16)) }
    }

    /// A Cast group (speakers playing together) rather than one receiver.
    public var isGroup: Bool {
        capabilities.contains(.multizoneGroup) || model == "Google Cast Group"
    }

    /// Whether it shows video (a TV or a dongle behind one).
    public var showsVideo: Bool { capabilities.contains(.videoOut) }

    /// The UDN the same receiver has over UPnP/DIAL (`uuid:` and its id with dashes), when
    /// the id is a UUID's 32 hex digits.
    public var udn: String? {
        let hex = id.filter { $0 != "-" }
        guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else { return nil }
        var parts: [Substring] = []
        var index = hex.startIndex
        for length in [8, 4, 4, 4, 12] {
            let end = hex.index(index, offsetBy: length)
            parts.append(hex[index..<end])
            index = end
        }
        return "uuid:" + parts.joined(separator: "-")
    }

    private static func trimmed(_ text: String) -> String {
        var characters = Substring(text)
        while characters.first?.isWhitespace == true { characters.removeFirst() }
        while characters.last?.isWhitespace == true { characters.removeLast() }
        return String(characters)
    }
}
