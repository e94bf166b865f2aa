import BoxConfiguration
import MediaRouteBusAPI

extension Manager1.Adapter {
    /// The adapter as `Manager1.Adapters` lists it, from the box's configuration of it.
    init(_ settings: AdapterSettings) {
        self.init(
            name: settings.name, subsystem: settings.subsystem, transport: settings.transport.rawValue,
            role: settings.role.rawValue, enabled: settings.enabled, scanMode: settings.scanMode?.rawValue)
    }
}
