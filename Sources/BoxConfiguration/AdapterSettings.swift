

/// What the daemon does with one adapter: the configuration's defaults for its
/// transport with the device's udev properties on top.
public struct AdapterSettings: Sendable, Hashable {
    public var name: String
    public var subsystem: String
    public var transport: AdapterTransport
    public var enabled: Bool
    public var role: AdapterRole
    public var scanMode: WiFiScanMode?
    /// Where each value came from, for logs: `config`, `udev`, `default`.
    public var source: String

    /// Resolves the settings of `record`.
    /// - Returns: the settings, or the property mistake (named after the device, since udev does not say which rule set it).
    public static func resolve(_ record: AdapterRecord, configuration: DaemonConfiguration) -> Result<AdapterSettings, AdapterPropertyError> {
        for key in UdevProperty.all {
            if let value = record.properties[key], let problem = UdevProperty.validate(key, value) {
                return .failure(AdapterPropertyError(adapter: record.name, message: problem))
            }
        }
        let fromUdev = record.properties[UdevProperty.transport] != nil
        let transport = record.properties[UdevProperty.transport].flatMap(AdapterTransport.init(rawValue:)) ?? record.defaultTransport
        guard let defaults = configuration.settings(for: transport) else {
            return .success(AdapterSettings(
                name: record.name, subsystem: record.subsystem, transport: .none, enabled: false, role: .standby, scanMode: nil,
                source: fromUdev ? "udev" : "default"))
        }
        var enabled = defaults.enabled
        if let flag = record.properties[UdevProperty.enabled] { enabled = flag == "1" }
        if transport == .bluetooth, let preferred = defaults.preferredAdapter, preferred != record.name, record.properties[UdevProperty.role] == nil {
            // Another controller is the configured one: keep this one in reserve.
            return .success(AdapterSettings(
                name: record.name, subsystem: record.subsystem, transport: transport, enabled: enabled, role: .standby, scanMode: nil,
                source: "config"))
        }
        let role = record.properties[UdevProperty.role].flatMap(AdapterRole.init(rawValue:)) ?? defaults.role
        let scan = transport == .wifi ? (record.properties[UdevProperty.wifiScan].flatMap(WiFiScanMode.init(rawValue:)) ?? defaults.scanMode) : nil
        return .success(AdapterSettings(
            name: record.name, subsystem: record.subsystem, transport: transport, enabled: enabled, role: role, scanMode: scan,
            source: fromUdev ? "udev" : "config"))
    }
}
