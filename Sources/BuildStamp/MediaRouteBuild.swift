import CBuildStamp
import RoutingModel

/// What this binary is: the package's version and the git commit it was built from, both
/// fixed at build time (`mediarouted --version`, `mediaroutectl --version`, `Manager1.Version`
/// and `Manager1.Commit`, the daemon's first log line).
public enum MediaRouteBuild {
    /// The package version (``MediaRouteVersion/current``), as `debian/changelog` and CHANGELOG.md give it.
    public static let version = MediaRouteVersion.current
    /// The commit's abbreviated hash, with `-dirty` when the tree had uncommitted changes, or
    /// `unknown` for a build from a tree without git history (say it with `MEDIAROUTE_COMMIT`).
    public static let commit = String(cString: mediaroute_build_commit())
    /// `0.2.0 (commit 1a2b3c4d5e6f)`.
    public static var description: String { "\(version) (commit \(commit))" }
}
