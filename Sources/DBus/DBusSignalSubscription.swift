import CDBus
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// A ``DBusConnection/handleSignals(matchingAny:finished:_:)`` subscription;
/// ``cancel()`` (or releasing it) stops the handler and removes the match rules
/// from the bus. Also usable for other synchronous observations built on one.
public final class DBusSignalSubscription: Sendable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    /// `onCancel` runs once, on the first ``cancel()`` or on release.
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Mutex(onCancel)
    }

    /// Idempotent.
    public func cancel() {
        let action = onCancel.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit {
        cancel()
    }
}
