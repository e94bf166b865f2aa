

/// How to reach one device over one transport, plus what discovery learned about it.
///
/// An endpoint is a plain value: extensions keep it in their
/// `MediaOutputDevice.requiredNetworkEndpoints` and hand it back to the
/// transport's ``Transport/connect(to:)``.
public struct Endpoint: Sendable, Hashable, Codable {
    /// Where the device is, in the terms of its transport.
    public enum Address: Sendable, Hashable, Codable {
        /// A simulated device of the loopback transport, by name.
        case loopback(name: String)
        /// An IP host (literal address or name), a port, and the interface it was seen on.
        case ip(host: String, port: UInt16, interface: String?)
        /// A Bluetooth device address (`AA:BB:CC:DD:EE:FF`) on an adapter (`hci0`), and the
        /// object that stands for the device in the Bluetooth stack (BlueZ's
        /// `/org/bluez/hci0/dev_AA_BB_…`; empty where there is none).
        case bluetooth(address: String, adapter: String, object: String = "")
        /// A Wi-Fi BSSID seen on the interface with this index.
        case wifi(bssid: String, interfaceIndex: Int32)
    }

    /// Stable identity of the endpoint within its transport (e.g. a UDN, a Bluetooth address).
    public var id: String
    /// The transport that found it (e.g. `loopback`, `lan`, `bluez`, `wifi`).
    public var transport: String
    public var address: Address
    /// The name the device gives itself in discovery (a Bluetooth alias, a Wi-Fi
    /// Display device name, an SSID), when it gives one.
    public var name: String?
    /// Signal strength in dBm where the transport measures one (RSSI).
    public var signalStrength: Int?
    /// What the device itself says in discovery, as key/value pairs (TXT records, a
    /// description's fields): the wire's words, read by the extension of that protocol.
    public var attributes: [String: String]
    /// What the transport learned of the device that other layers act on, typed.
    public var facts: EndpointFacts
    /// Advertised services (service types, UUIDs, URNs).
    public var services: [String]
    /// Identifiers of the physical device learned in discovery (a UDN, a MAC), beyond what
    /// the address says; ``allIdentifiers`` adds those.
    public var identifiers: [DeviceIdentifier]

    public init(
        id: String,
        transport: String,
        address: Address,
        name: String? = nil,
        signalStrength: Int? = nil,
        attributes: [String: String] = [:],
        services: [String] = [],
        identifiers: [DeviceIdentifier] = [],
        facts: EndpointFacts = EndpointFacts()
    ) {
        self.identifiers = identifiers
        self.facts = facts
        self.id = id
        self.transport = transport
        self.address = address
        self.name = name
        self.signalStrength = signalStrength
        self.attributes = attributes
        self.services = services
    }
}
