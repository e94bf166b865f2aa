#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The files clients handed over, each under a path of its own that names no file on disk:
/// `/run/mediaroute/handed/TOKEN/NAME` (a 128-bit token). Extensions see an ordinary
/// `file://` URL; ``ServedFiles`` serves such a path from the descriptor, and a path under
/// that directory with no handed file is nothing — never a lookup on disk. At most
/// ``maximumFiles`` at once.
public final class HandedFiles: Sendable {
    /// The one table of the process (the daemon's sessions and the extensions that serve files share it).
    public static let shared = HandedFiles()

    public static let directory = "/run/mediaroute/handed/"
    public static let maximumFiles = 64

    private let files = Mutex<[String: OpenFile]>([:])

    public init() {}

    /// Takes `descriptor` (always: closed here when refused) as a file named `name` and
    /// returns the path it is known by until ``release(_:)``.
    /// - Throws: when it is not a readable regular file, the name is not one path component,
    ///   or ``maximumFiles`` are handed already.
    public func hand(owning descriptor: Int32, name: String) throws(HandedFileError) -> String {
        var info = stat()
        let mode = fcntl(descriptor, F_GETFL)
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, mode >= 0, mode & O_ACCMODE != O_WRONLY else {
            close(descriptor)
            throw HandedFileError("the descriptor handed over is not a readable regular file")
        }
        guard !name.isEmpty, name.utf8.count <= 255, !name.contains("/"), !name.contains("\0"), name != ".", name != ".." else {
            close(descriptor)
            throw HandedFileError("a handed file's name is one path component of 1 to 255 bytes")
        }
        let file = OpenFile(owning: descriptor, name: name)
        let token = ServedFiles.token()
        let taken = files.withLock { files -> Bool in
            guard files.count < Self.maximumFiles else { return false }
            files[token] = file
            return true
        }
        guard taken else { throw HandedFileError("\(Self.maximumFiles) handed files are open already") }
        return Self.directory + token + "/" + name
    }

    /// Whether `path` lies where handed files are named (so it is never looked up on disk).
    public static func isHandedPath(_ path: String) -> Bool {
        path.hasPrefix(directory)
    }

    /// The file handed under `path`, while it is.
    public func file(at path: String) -> OpenFile? {
        guard Self.isHandedPath(path) else { return nil }
        let rest = path.dropFirst(Self.directory.count).split(separator: "/", maxSplits: 1)
        guard rest.count == 2, let file = files.withLock({ $0[String(rest[0])] }), file.name == rest[1] else { return nil }
        return file
    }

    /// Lets go of the file handed under `path`; a device being served it keeps reading until
    /// its server entry goes too.
    public func release(_ path: String) {
        guard Self.isHandedPath(path) else { return }
        let rest = path.dropFirst(Self.directory.count).split(separator: "/", maxSplits: 1)
        guard let token = rest.first else { return }
        files.withLock { _ = $0.removeValue(forKey: String(token)) }
    }

    /// How many are handed now.
    public var count: Int { files.withLock { $0.count } }
}
