#if canImport(Glibc)
import Glibc
#endif
import DBus
import Synchronization

/// Who may read what the daemon keeps private on the bus (a session's URL; the data-channel
/// bytes and pushed commands ride on signals the bus policy delivers to the same people):
/// root, the daemon's own user, and members of the `mediaroute` group, the people the
/// policy lets control routes. The caller's user comes from the bus
/// (`GetConnectionUnixUser`), never from the caller.
final class PrivateReaders: Sendable {
    static let group = "mediaroute"

    private let connection: DBusConnection
    /// Answers by unique name; bounded (unique names are never reused, so an old answer is only stale memory).
    private let known = Mutex<[String: Bool]>([:])

    init(connection: DBusConnection) {
        self.connection = connection
    }

    func mayRead(_ sender: String) async -> Bool {
        if let answer = known.withLock({ $0[sender] }) { return answer }
        let reply = try? await connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetConnectionUnixUser", [.string(sender)])
        guard let value = reply?.first?.integer, let uid = uid_t(exactly: value) else { return false }
        let answer = Self.mayRead(uid: uid)
        known.withLock { known in
            if known.count >= 256 { known.removeAll() }
            known[sender] = answer
        }
        return answer
    }

    /// Root, this process's user, or a member of the group (primary or supplementary).
    static func mayRead(uid: uid_t) -> Bool {
        if uid == 0 || uid == getuid() { return true }
        guard let group = getgrnam(Self.group)?.pointee.gr_gid, let user = getpwuid(uid)?.pointee, let name = user.pw_name else { return false }
        if user.pw_gid == group { return true }
        var groups = [gid_t](repeating: 0, count: 64)
        var count = Int32(groups.count)
        guard getgrouplist(name, user.pw_gid, &groups, &count) != -1 else { return false }
        return groups.prefix(Int(count)).contains(group)
    }
}
