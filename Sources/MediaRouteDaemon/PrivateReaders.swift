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

    /// The user of the connection `sender`, as the bus says it.
    private func unixUser(of sender: String) async -> uid_t? {
        let reply = try? await connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetConnectionUnixUser", [.string(sender)])
        return reply?.first?.integer.flatMap { uid_t(exactly: $0) }
    }

    func mayRead(_ sender: String) async -> Bool {
        if let answer = known.withLock({ $0[sender] }) { return answer }
        guard let uid = await unixUser(of: sender) else { return false }
        let answer = Self.mayRead(uid: uid)
        known.withLock { known in
            if known.count >= 256 { known.removeAll() }
            known[sender] = answer
        }
        return answer
    }

    /// Whether `sender` may play into an existing route (`Session1.AcquireAudio`): who may read,
    /// or a user logind says is active — logged in on a seat, in the foreground — the user
    /// logind gives the seat's sound card to (its `uaccess` rule). That is the user whose
    /// session PipeWire `mediarouted pipewire-session` publishes the routes' nodes in. Asked
    /// each time, not remembered: a user stops being active when the seat switches.
    func mayPlayAudio(_ sender: String) async -> Bool {
        if await mayRead(sender) { return true }
        guard let uid = await unixUser(of: sender),
            let user = try? await connection.call(
                destination: "org.freedesktop.login1", path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                member: "GetUser", [.uint32(UInt32(uid))], timeout: .seconds(2)).first?.objectPath,
            let state = try? await connection.call(
                destination: "org.freedesktop.login1", path: user, interface: "org.freedesktop.DBus.Properties",
                member: "Get", [.string("org.freedesktop.login1.User"), .string("State")], timeout: .seconds(2)).first?.unwrapped.string
        else { return false }
        return state == "active"
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
