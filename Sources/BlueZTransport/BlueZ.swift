public import DBus

/// BlueZ's names on the bus.
public enum BlueZ {
    public static let busName = "org.bluez"
    public static let root: DBusObjectPath = "/org/bluez"
    public static let agentManager = "org.bluez.AgentManager1"
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    public static let mediaTransport = "org.bluez.MediaTransport1"
    public static let agent = "org.bluez.Agent1"

    /// A 16-bit SIG UUID in its 128-bit form, as BlueZ writes it.
    public static func uuid(_ short: UInt16) -> String {
        let hex = String(short, radix: 16)
        return "0000" + String(repeating: "0", count: 4 - hex.count) + hex + "-0000-1000-8000-00805f9b34fb"
    }

    /// Volume Control Service and its characteristics.
    public static let volumeControlService = uuid(0x1844)
    public static let volumeState = uuid(0x2B7D)
    public static let volumeControlPoint = uuid(0x2B7E)
    /// Published Audio Capabilities, Audio Stream Control, A2DP sink.
    public static let publishedAudioCapabilities = uuid(0x1850)
    public static let audioStreamControl = uuid(0x184E)
    public static let audioSink = uuid(0x110B)
    /// A2DP source: the UUID of our own endpoint, which bluetoothd gives the transports it configures.
    public static let audioSource = uuid(0x110A)

    /// A UUID in lower case; BlueZ writes them so, and then no copy is made.
    public static func lowercased(_ uuid: String) -> String {
        uuid.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? uuid.lowercased() : uuid
    }
}

/// The properties of one object: interface → properties.
public typealias BlueZInterfaces = [String: BlueZProperties]

extension DBusValue {
    /// `a{sa{sv}}` as interface → properties, in one pass: this runs for every
    /// device BlueZ announces, on the thread reading its signals.
    var interfaces: BlueZInterfaces {
        guard case .dictionary(_, _, let entries) = unwrapped else { return [:] }
        var result = BlueZInterfaces(minimumCapacity: entries.count)
        for entry in entries {
            guard let name = entry.key.string, let properties = BlueZProperties(entry.value) else { continue }
            result[name] = properties
        }
        return result
    }
}
