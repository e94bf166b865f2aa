/// The Volume Control Service (Bluetooth VCS 1.0) without the bus: the Volume State
/// characteristic (0x2B7D) decoded, the Volume Control Point (0x2B7E) operations
/// encoded with the change counter, and what the client believes the speaker's
/// state is between its writes and the speaker's notifications. The BLE speaker
/// extension moves these bytes over BlueZ's GATT; everything here is tested on
/// bytes alone (as BlueZ keeps `src/shared/vcp.c` apart from `profiles/audio/vcp.c`).
public struct VolumeControl: Sendable, Hashable {
    /// Volume State: volume 0–255, mute, and the change counter every accepted
    /// operation increments (modulo 256).
    public struct State: Sendable, Hashable {
        public var volume: UInt8
        public var muted: Bool
        public var changeCounter: UInt8

        public init(volume: UInt8, muted: Bool, changeCounter: UInt8) {
            self.volume = volume
            self.muted = muted
            self.changeCounter = changeCounter
        }

        /// Decodes the characteristic's value; nil when it is shorter than its three
        /// bytes (bytes past them are left for a later version of the service).
        public init?(_ bytes: [UInt8]) {
            guard bytes.count >= 3 else { return nil }
            self.init(volume: bytes[0], muted: bytes[1] != 0, changeCounter: bytes[2])
        }

        public var bytes: [UInt8] { [volume, muted ? 1 : 0, changeCounter] }
    }

    /// Volume Control Point opcodes.
    public enum Opcode: UInt8, Sendable, Hashable, CaseIterable {
        case relativeDown = 0x00, relativeUp = 0x01, unmuteRelativeDown = 0x02, unmuteRelativeUp = 0x03
        case setAbsolute = 0x04, unmute = 0x05, mute = 0x06
    }

    /// The ATT application error a speaker answers a write with when its change
    /// counter is not the one the write carries: read the state again, write again.
    public static let invalidChangeCounter: UInt8 = 0x80
    /// The ATT application error for an opcode the speaker does not know.
    public static let opcodeNotSupported: UInt8 = 0x81

    /// The speaker's state as last read or notified, with our own accepted writes applied.
    public private(set) var state: State?
    /// The state as the speaker itself last said it (read or notified), without our writes:
    /// what listeners were told. The speaker's notification after our own write is news
    /// against this, not against ``state``, so the write is confirmed when the speaker says so.
    private var reported: State?

    public init(state: State? = nil) {
        self.state = state
        reported = state
    }

    /// The volume as a fraction 0.0–1.0 (0 before the state is known).
    public var level: Float { state.map { Float($0.volume) / 255 } ?? 0 }
    public var isMuted: Bool { state?.muted ?? false }

    /// The 0–255 volume for a fraction (clamped; NaN is 0).
    public static func absoluteVolume(_ fraction: Float) -> UInt8 {
        UInt8((min(max(fraction.isFinite ? fraction : 0, 0), 1) * 255).rounded())
    }

    /// A relative step up or down that also unmutes when the speaker is muted,
    /// as a person pressing a volume key expects.
    public func step(up: Bool) -> Opcode {
        switch (up, isMuted) {
        case (true, false): .relativeUp
        case (true, true): .unmuteRelativeUp
        case (false, false): .relativeDown
        case (false, true): .unmuteRelativeDown
        }
    }

    /// The control point value for `opcode` with the current change counter
    /// (`volume` is the operand of `setAbsolute` only); nil before the state is known.
    public func write(_ opcode: Opcode, volume: UInt8? = nil) -> [UInt8]? {
        guard let state else { return nil }
        if opcode == .setAbsolute {
            guard let volume else { return nil }
            return [opcode.rawValue, state.changeCounter, volume]
        }
        return [opcode.rawValue, state.changeCounter]
    }

    /// The speaker accepted our write: its counter moved on, and the mute flag (and
    /// an absolute volume) are what we asked for until its notification says more.
    /// A relative step's size is the speaker's, so the volume waits for that.
    public mutating func accepted(_ opcode: Opcode, volume: UInt8? = nil) {
        guard var next = state else { return }
        next.changeCounter = next.changeCounter &+ 1
        switch opcode {
        case .mute: next.muted = true
        case .unmute, .unmuteRelativeUp, .unmuteRelativeDown: next.muted = false
        case .setAbsolute: if let volume { next.volume = volume }
        case .relativeUp, .relativeDown: break
        }
        state = next
    }

    /// A read or notified Volume State. Returns whether the volume or the mute flag
    /// changed (what a listener is told; a new counter alone is not news), or nil
    /// when the value is malformed (the state is then left as it was).
    @discardableResult
    public mutating func received(_ bytes: [UInt8]) -> Bool? {
        guard let new = State(bytes) else { return nil }
        let changed = reported.map { $0.volume != new.volume || $0.muted != new.muted } ?? true
        state = new
        reported = new
        return changed
    }
}
