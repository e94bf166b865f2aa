/// The protocols this build carries: the package traits it was built with (Package.swift,
/// `make release TRAITS=…`). What a left-out protocol's configuration keys get is one notice
/// line each, and no effect (``DaemonConfiguration/notices``).
public enum BuildTraits {
    /// Every protocol trait, in the order `--help` and the docs list them.
    public static let all = ["Cast", "AirPlay", "PipeWire", "WiFi", "Bluetooth"]

    /// The protocol traits this binary was built with.
    public static let included: [String] = {
        var traits: [String] = []
        #if Cast
        traits.append("Cast")
        #endif
        #if AirPlay
        traits.append("AirPlay")
        #endif
        #if PipeWire
        traits.append("PipeWire")
        #endif
        #if WiFi
        traits.append("WiFi")
        #endif
        #if Bluetooth
        traits.append("Bluetooth")
        #endif
        return traits
    }()

    /// The protocol traits this binary was built without.
    public static var leftOut: [String] { all.filter { !included.contains($0) } }

    /// The trait a configuration section (key nil) or key belongs to, when it is not the
    /// LAN's and the daemon's own: `[wifi]` is Wi-Fi's, `[lan] cast-app-namespaces` Cast's.
    static func trait(section: String, key: String?) -> String? {
        switch (section, key) {
        case ("wifi", _): "WiFi"
        case ("bluetooth", _): "Bluetooth"
        case ("lan", "cast-app-namespaces"): "Cast"
        case ("daemon", "airplay-latency"), ("lan", "airplay-protocols"): "AirPlay"
        case ("audio", "pipewire"), ("audio", "pipewire-runtime-dir"), ("video", "pipewire"): "PipeWire"
        default: nil
        }
    }
}
