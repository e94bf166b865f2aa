/// The package's version, as `mediaroutectl --version`, `mediarouted --version` and the
/// daemon's `Manager1.Version` say it. Semantic versioning: before 1.0 a minor step may change
/// the API (the README's "Migrating" section says how), a patch step does not.
public enum MediaRouteVersion {
    /// 0.2.0: the app's vocabulary as values (RoutingModel without the extension API),
    /// `OutputDeviceDescription`, `InterfaceControllable`, one `RouteStatus`.
    public static let current = "0.11.7"
}
