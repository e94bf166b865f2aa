#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Writes pictures into a route's video socket on a thread of its own, newest first: PipeWire's
/// loop hands a picture over and goes on at once, whatever the socket does.
///
/// The socket holds about one picture and the route takes one per frame period, so a write may
/// wait that long; a picture handed over while one still waits replaces it (the older one is
/// dropped and counted), as the route's own pacer would have dropped it. Pictures are written
/// whole, so the route's stream of pictures stays aligned.
final class LatestPictureWriter: Sendable {
    private struct Slot {
        var pending: [UInt8]?
        /// A buffer the thread wrote and gave back, for the next picture to be made in.
        var spare: [UInt8]?
        var stopping = false
    }

    private let descriptor: Int32
    private let wake: (read: Int32, write: Int32)
    private let slot = Mutex(Slot())
    private let thread = Mutex<pthread_t?>(nil)
    /// The route's video ended under the writer (the socket's reader is gone).
    let lost = Atomic<Bool>(false)
    /// Pictures written whole, and pictures replaced by a newer one before they were written.
    let written = Atomic<UInt64>(0)
    let replaced = Atomic<UInt64>(0)

    /// A writer for `descriptor` (the route's socket, which it owns and closes); nil when no
    /// thread could be started (the descriptor is closed then too).
    init?(descriptor: Int32) {
        var ends: [Int32] = [-1, -1]
        guard makePipe(&ends) else {
            close(descriptor)
            return nil
        }
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)  // the loop never waits to wake the thread
        // Blocking writes: the thread waits for room, never spins.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        self.descriptor = descriptor
        wake = (ends[0], ends[1])
        let context = Unmanaged.passRetained(self).toOpaque()
        var handle = pthread_t()
        guard pthread_create(&handle, nil, { context in
            let writer = Unmanaged<LatestPictureWriter>.fromOpaque(context!).takeRetainedValue()
            writer.run()
            return nil
        }, context) == 0 else {
            Unmanaged<LatestPictureWriter>.fromOpaque(context).release()
            close(ends[0])
            close(ends[1])
            close(descriptor)
            return nil
        }
        thread.withLock { $0 = handle }
    }

    /// Hands `picture` to the thread; `picture` comes back as an old buffer to make the next one in.
    func offer(_ picture: inout [UInt8]) {
        let wasWaiting = slot.withLock { slot -> Bool in
            let waiting = slot.pending != nil
            var next = slot.pending ?? slot.spare ?? []
            slot.spare = nil
            swap(&next, &picture)
            slot.pending = next
            return waiting
        }
        if wasWaiting {
            replaced.add(1, ordering: .relaxed)
        } else {
            var one: UInt8 = 1
            _ = write(wake.write, &one, 1)
        }
    }

    /// Ends the thread (a write waiting for room is cut short) and closes the socket: the route's
    /// video ends after what was written.
    func stop() {
        // Once: the descriptors are closed after the first stop and their numbers may be reused.
        guard let handle = thread.withLock({ thread -> pthread_t? in defer { thread = nil }; return thread }) else { return }
        slot.withLock { $0.stopping = true }
        var one: UInt8 = 1
        _ = write(wake.write, &one, 1)
        _ = shutdown(descriptor, Int32(SHUT_WR))
        pthread_join(handle, nil)
        close(wake.read)
        close(wake.write)
        close(descriptor)
    }

    private func run() {
        var scratch = [UInt8](repeating: 0, count: 16)
        while true {
            let count = read(wake.read, &scratch, scratch.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            let (picture, stopping) = slot.withLock { slot -> ([UInt8]?, Bool) in
                defer { slot.pending = nil }
                return (slot.pending, slot.stopping)
            }
            if stopping { return }
            guard let picture else { continue }
            guard writeAll(picture) else {
                lost.store(true, ordering: .releasing)
                return
            }
            written.add(1, ordering: .relaxed)
            slot.withLock { $0.spare = picture }
        }
    }

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                offset += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }
}

/// A pipe whose ends close on exec (Glibc's `pipe2` needs _GNU_SOURCE, which Swift's module map leaves out).
func makePipe(_ ends: inout [Int32]) -> Bool {
    guard pipe(&ends) == 0 else { return false }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return true
}
