/// A mistake in a configuration file or a udev rule, with where it is.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var file: String
    /// 1-based; 0 when the whole file is concerned (it cannot be read).
    public var line: Int
    public var message: String

    public init(file: String, line: Int, _ message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`, the way compilers say it.
    public var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}
