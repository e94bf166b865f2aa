

/// What a transport learned of an endpoint that extensions act on: typed, where they used to
/// be `attributes` strings both sides had to spell the same way.
public struct EndpointFacts: Sendable, Hashable, Codable {
    /// What kind of device a transport found, where it tells.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A simulated TV or speaker (the loopback transport).
        case tv, speaker
        /// A Wi-Fi Display (Miracast) sink.
        case wifiDisplaySink
        /// A device's own access point, waiting to be set up.
        case setupAccessPoint
    }

    /// The Bluetooth major device class, as BlueZ reports it (only the class MediaRoute acts on).
    public enum BluetoothMajorClass: String, Sendable, Hashable, Codable {
        case audioVideo = "audio-video"
    }

    /// This box's own address on the link facing the device: where the device reaches the box
    /// back (a served file, an event callback).
    public var interfaceAddress: String?
    /// Where the device's description is (UPnP's `LOCATION`), on the device's own host.
    public var descriptionLocation: String?
    public var kind: Kind?
    public var bluetoothMajorClass: BluetoothMajorClass?

    public init(
        interfaceAddress: String? = nil, descriptionLocation: String? = nil, kind: Kind? = nil, bluetoothMajorClass: BluetoothMajorClass? = nil
    ) {
        self.interfaceAddress = interfaceAddress
        self.descriptionLocation = descriptionLocation
        self.kind = kind
        self.bluetoothMajorClass = bluetoothMajorClass
    }
}
