#if canImport(Glibc)
import Glibc
#endif

/// The directories a daemon hands local files out of (`[http] serve-from`): a path that
/// another user names on the bus is served only when, with every link in it resolved, it
/// lies in one of them, and its last component is not itself a link. So a request for
/// `/etc/mediaroute/household.key`, or for a link in a served directory that points at it,
/// is refused before anything is opened for a device.
public struct ServedDirectories: Sendable, Equatable {
    /// Where box makers mount media: removable drives and shared folders.
    public static let defaults = ["/media", "/mnt", "/srv"]

    /// As configured, and resolved (a configured directory that is itself a link is followed once, here).
    public let directories: [String]
    private let resolved: [String]

    public init(_ directories: [String]) {
        self.directories = directories
        resolved = directories.compactMap { Self.realPath($0) }
    }

    /// The resolved path of `path` when it may be served.
    public func admit(_ path: String) throws(ServedFileError) -> String {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw ServedFileError(description: "\(path) does not exist") }
        guard info.st_mode & S_IFMT != S_IFLNK else { throw ServedFileError(description: "\(path) is a symbolic link: give the file itself") }
        guard let real = Self.realPath(path) else { throw ServedFileError(description: "\(path) cannot be resolved") }
        guard resolved.contains(where: { real.hasPrefix($0 == "/" ? "/" : $0 + "/") }) else {
            throw ServedFileError(description: "\(path) is not in a directory this box serves files from ([http] serve-from: \(directories.joined(separator: ", ")))")
        }
        guard ServedFiles.isReadableFile(atPath: real) else { throw ServedFileError(description: "\(path) is not a readable file") }
        return real
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
