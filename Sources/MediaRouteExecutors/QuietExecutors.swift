@_spi(ExperimentalCustomExecutors) import _Concurrency

/// Swift concurrency's executors for a daemon that must not wake up when idle:
/// a ``WorkerPoolExecutor`` as the default executor and a ``MainThreadExecutor``
/// for the main actor. Nothing in them is periodic.
///
/// Install them first thing in a synchronous `main`, before any task exists,
/// then hand the main thread to the main executor:
///
/// ```swift
/// static func main() {
///     QuietExecutors.install()
///     Task { await daemon(); exit(0) }
///     QuietExecutors.runMainThread()
/// }
/// ```
///
/// This uses Swift 6.3's experimental custom-executor interface
/// (`_createExecutors(factory:)`, SPI `ExperimentalCustomExecutors`), the only
/// way to replace the libdispatch-backed executors.
public enum QuietExecutors {
    static let pool = WorkerPoolExecutor()
    static let main = MainThreadExecutor()

    /// Makes these the process's executors. Call once, on the main thread, before any task starts.
    public static func install() {
        _createExecutors(factory: QuietExecutorFactory.self)
    }

    /// Jobs the worker pool has run (0 until ``install()``; for tests and diagnostics).
    public static var poolJobsRun: UInt64 { pool.completedJobs }

    /// Runs main-actor jobs on the calling (main) thread until ``main`` is stopped.
    public static func runMainThread() {
        try? main.run()
    }
}

/// The factory the runtime asks for the two executors (the protocol is SPI, so the conformance stays internal).
enum QuietExecutorFactory: ExecutorFactory {
    static var mainExecutor: any MainExecutor { QuietExecutors.main }
    static var defaultExecutor: any TaskExecutor { QuietExecutors.pool }
}
