import MediaRouteTesting

/// `#require` without Testing's macro (usable outside tests).
public func require<T>(_ value: T?, _ what: String = "value") throws -> T {
    guard let value else { throw PrivateBusError(message: "missing \(what)") }
    return value
}
