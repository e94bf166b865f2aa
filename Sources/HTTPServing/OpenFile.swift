#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A file a client opened and handed over as a descriptor (`Session1.StartFile`): the daemon
/// reads it with `pread` and never opens a path for it, so a person's file in their home
/// directory reaches a TV without the daemon's user being able to open anything there.
public final class OpenFile: Sendable {
    /// The descriptor; owned, closed when the last reference goes.
    public let descriptor: Int32
    public let name: String

    /// Takes ownership of `descriptor`.
    init(owning descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
    }

    deinit { close(descriptor) }

    /// Its size now (a file may grow or shrink while it is served), nil when it is no longer a regular file.
    public var size: Int? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(info.st_size)
    }
}
