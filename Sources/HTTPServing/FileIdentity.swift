#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Which file a path named when it was handed out (device and inode).
public struct FileIdentity: Sendable, Hashable {
    public var device: UInt64
    public var inode: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
