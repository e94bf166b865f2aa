import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Scratch files of one test or bench process, all under one directory that is removed when
/// the process exits, so a test that keeps a file for a peer's whole life (a pin file, a
/// receiver's configuration, a tone) leaves nothing in `/tmp` however it ends.
public enum TestScratch {
    static let prefix = "mediaroute-tests-"

    /// `$TMPDIR/mediaroute-tests-PID`, made on first use. Directories of processes that no
    /// longer run (a run killed before it could clean up) are removed then.
    public static let directory: String = {
        let root = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH { try? FileManager.default.removeItem(atPath: root + name) }
        }
        let path = root + prefix + "\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: TestScratch.directory) }
        return path
    }()

    /// A new path in ``directory``: `NAME-XXXXXXXX` followed by `suffix` (nothing is created).
    public static func path(_ name: String, suffix: String = "") -> String {
        directory + "/" + name + "-" + UUID().uuidString.prefix(8) + suffix
    }
}
