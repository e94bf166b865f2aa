

/// A network interface or Bluetooth controller as sysfs and udev describe it.
public struct AdapterRecord: Sendable, Hashable {
    /// `net` or `bluetooth`.
    public var subsystem: String
    /// Kernel name: `eth0`, `wlan0`, `hci0`.
    public var name: String
    /// From the `uevent` file (udev's database does not keep it): `wlan`, `host`, or empty for Ethernet.
    public var devtype: String
    public var ifindex: Int?
    /// udev properties (`E:` lines of the database), or the uevent's when udev does not run.
    public var properties: [String: String]

    public init(subsystem: String, name: String, devtype: String, ifindex: Int? = nil, properties: [String: String] = [:]) {
        self.subsystem = subsystem
        self.name = name
        self.devtype = devtype
        self.ifindex = ifindex
        self.properties = properties
    }

    /// The transport the shipped rules give this kind of device (used when udev is not running).
    public var defaultTransport: AdapterTransport {
        switch (subsystem, devtype) {
        case ("bluetooth", "host"): .bluetooth
        case ("net", "wlan"): .wifi
        case ("net", ""): name == "lo" ? .none : .lan
        default: .none
        }
    }
}
