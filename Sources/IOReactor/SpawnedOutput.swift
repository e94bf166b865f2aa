public import CEpoll
#if canImport(Glibc)
import Glibc
#endif

/// Where a spawned process's standard output and error go.
public enum SpawnedOutput: Sendable, Hashable {
    /// This process's own (a daemon's journal).
    case inherited
    /// Nowhere.
    case discarded
    /// Both to this descriptor.
    case descriptor(Int32)
}

/// Starts `arguments[0]` (a path) with `arguments` and exactly `environment`, its standard
/// input from `/dev/null` and no other descriptor of this process.
///
/// Swift's threads block signals and a daemon's lifecycle ignores SIGTERM; a child inherits
/// both through `exec`, and would then never see the SIGTERM meant to stop it. So the
/// child starts with no signal blocked and SIGTERM, SIGINT and SIGPIPE at their defaults.
/// Follow its exit with ``IOReactor/reap(_:_:)`` or `waitpid`. With `newProcessGroup` it leads a
/// process group of its own (its id is the child's pid), so that a signal to the group also
/// reaches what it starts in the background.
public func spawnProcess(
    _ arguments: [String], environment: [String: String], output: SpawnedOutput, newProcessGroup: Bool = false
) throws(IOReactorError) -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    switch output {
    case .inherited:
        break
    case .discarded:
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    case .descriptor(let descriptor):
        posix_spawn_file_actions_adddup2(&actions, descriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, descriptor, 2)
    }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    // Nothing else of this process goes to the child: swift-nio opens its sockets without
    // close-on-exec, and a sink or test peer must not hold the daemon's listening sockets.
    _ = mr_spawn_close_from(&actions, 3)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
    if newProcessGroup {
        flags |= POSIX_SPAWN_SETPGROUP
        posix_spawnattr_setpgroup(&attributes, 0)
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
    guard status == 0 else { throw IOReactorError(errno: status, "cannot start \(arguments[0])") }
    return pid
}

/// This process's environment.
public var processEnvironment: [String: String] {
    var result: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
        let text = String(decoding: UnsafeRawBufferPointer(start: entry, count: strlen(entry)), as: UTF8.self)
        if let equals = text.firstIndex(of: "=") { result[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
        pointer += 1
    }
    return result
}
