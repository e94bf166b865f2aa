import RoutingModel

/// Which member of a merged device activation tries, in which order, and why: the person's
/// choice for the device first, then the configured order (`preferred-protocols`), then
/// load order; only members that can do what is asked and can be activated now.
struct ProtocolChoice: Sendable {
    /// The protocol the person chose for this device, if any.
    var personsChoice: String?
    /// `preferred-protocols`: ids or their short names.
    var configured: [String]
    /// Each loaded protocol's place in load order.
    var loadOrder: [String: Int]

    /// The members in the order activation tries them.
    func ordered(_ members: [SystemDevice.Member]) -> [SystemDevice.Member] {
        let ranking = (personsChoice.map { [$0] } ?? []) + configured
        func rank(_ member: SystemDevice.Member) -> Int {
            let id = member.protocolType.identifier
            if let index = ranking.firstIndex(where: { $0 == id || MediaSharingProtocol.shortName(id) == $0 }) { return index }
            return ranking.count + (loadOrder[id] ?? Int.max / 2)
        }
        return members.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
    }

    /// The members to try, in order: through `protocolID` when given, with `features`, available.
    /// - Throws: ``MediaDeviceError`` `unsupported` saying why none can be tried (the first
    ///   capable member's unavailability, or no protocol with the features).
    func candidates(
        of device: SystemDevice, protocolID: String?, features: OutputDeviceDescription.Capabilities
    ) throws(MediaDeviceError) -> [SystemDevice.Member] {
        let capable = ordered(device.members).filter { member in
            (protocolID.map { member.protocolType.identifier == $0 } ?? true) && member.device.capabilities.isSuperset(of: features)
        }
        let candidates = capable.filter(\.device.isAvailable)
        guard candidates.isEmpty else { return candidates }
        if let reason = capable.first?.device.unavailableReason {
            throw MediaDeviceError(.unsupported, "\(device.displayName) is unavailable: \(reason)")
        }
        throw MediaDeviceError(.unsupported, "\(device.displayName) has no protocol with the requested features")
    }

    /// Why `member` is tried: the first is the person's choice, the preferred protocol or the
    /// first capable one; a later one falls back after what failed before it.
    func reason(for member: SystemDevice.Member, after failures: [String]) -> String {
        guard failures.isEmpty else { return "falling back: \(failures.joined(separator: "; "))" }
        if personsChoice == member.protocolType.identifier { return "the protocol chosen for this device" }
        return configured.isEmpty ? "the first protocol that can do what is asked" : "the preferred protocol"
    }

    /// Whether a failure ends activation instead of handing over to the next member: the
    /// person's own answers (a wrong code, a cancelled prompt) and a device already in use.
    static func endsActivation(_ error: MediaDeviceError) -> Bool {
        [.authorizationFailed, .cancelled, .activationInProgress, .deviceAlreadyActive].contains(error.code)
    }
}
