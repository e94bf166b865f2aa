public import DBus
import Logging
import MediaClock
import Synchronization
public import Transport

/// A device's audio transport (`org.bluez.MediaTransport1`): its codec and volume.
public struct BlueZMediaTransport: Sendable, Hashable {
    public var path: DBusObjectPath
    /// The profile UUID of the local endpoint that configured it (A2DP source for ours; A2DP
    /// sink where the box is the sink), or a BAP one for LE Audio.
    public var uuid: String?
    public var codec: UInt8
    public var configuration: [UInt8]
    /// `Volume` as BlueZ has it (0–127 for A2DP, 0–255 for BAP).
    public var volume: Int?
    /// `Delay`: what the speaker reported with AVDTP's Delay Report, in 1/10 ms (BlueZ has the
    /// property only once a report came, on endpoints registered with `DelayReporting`).
    public var delay: Int?

    /// Whether this is A2DP (classic) rather than LE Audio (BAP).
    public var isA2DP: Bool {
        let profile = uuid?.lowercased()
        return profile == BlueZ.audioSource || profile == BlueZ.audioSink
    }
    /// The top of the `Volume` scale: 127 for A2DP, 255 for BAP.
    public var volumeScale: Float { isA2DP ? 127 : 255 }

    /// The stream as the transport seam describes it.
    public var streamConfiguration: AudioStreamConfiguration {
        AudioStreamConfiguration(
            profile: isA2DP ? .a2dp : .leAudio, codec: codec, configuration: configuration,
            volume: volume.map { Float($0) / volumeScale }, reportedDelayMicroseconds: delay.map { $0 * 100 }, identity: path.rawValue)
    }

    init(path: DBusObjectPath, properties: BlueZProperties) {
        self.path = path
        uuid = properties["UUID"]?.string
        codec = UInt8(truncatingIfNeeded: properties["Codec"]?.integer ?? 0xFF)
        configuration = properties["Configuration"]?.bytes ?? []
        volume = properties["Volume"]?.integer.map(Int.init)
        delay = properties["Delay"]?.integer.map(Int.init)
    }
}
