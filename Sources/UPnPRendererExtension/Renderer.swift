import IPNetwork
import LANTransport
import MediaClock
import MediaDevice
import RoutingModel
import Transport
internal import UPnP

/// A MediaRenderer as the extension knows it: its description, what it plays,
/// its volume range, and the picker's device made from them.
struct Renderer: Sendable {
    var endpoint: Endpoint
    var description: DeviceDescription
    /// `GetProtocolInfo` sinks (empty when the device has no ConnectionManager or did not answer).
    var sinks: [ProtocolInfo]
    /// The `Volume` range the RenderingControl SCPD declares (0…100 when it declares none).
    var volumeRange: ClosedRange<Int>
    var renderingActions: Set<String>
    var transportActions: Set<String>
    var device: MediaOutputDevice
    var client: RendererClient

    var supportsNextURI: Bool { transportActions.contains("SetNextAVTransportURI") }

    /// Reads the description at the endpoint's `LOCATION` (on its host only).
    /// Sinks and SCPDs come after, with ``withSinks(_:)`` and ``withServiceDescriptions()``.
    /// - Throws: ``MediaDeviceError/Code/unsupported`` when it is not a MediaRenderer with
    ///   AVTransport and RenderingControl; `connectionFailed`/`timedOut` when it cannot be read.
    static func describe(
        endpoint: Endpoint, transport: LANTransport, limits: HTTPLimits, clock: any HostClock
    ) async throws(MediaDeviceError) -> Renderer {
        guard let locationText = endpoint.facts.descriptionLocation, let location = HTTPURL(locationText) else {
            throw MediaDeviceError(.discoveryFailed, "\(endpoint.id) has no usable LOCATION")
        }
        let response: HTTPResponse
        do {
            response = try await transport.fetch("GET", location.description, for: endpoint, limits: limits)
        } catch {
            throw RendererClient.deviceError(error, action: "description")
        }
        guard response.status == 200 else { throw MediaDeviceError(.connectionFailed, "HTTP \(response.status) for the description of \(endpoint.id)") }
        let description: DeviceDescription
        do {
            description = try DeviceDescription.parse(response.body, location: location)
        } catch {
            throw MediaDeviceError(.discoveryFailed, "description of \(endpoint.id): \(error)")
        }
        guard description.isMediaRenderer else {
            throw MediaDeviceError(.unsupported, "\(description.friendlyName) is not a MediaRenderer with AVTransport and RenderingControl")
        }
        let client = RendererClient(transport: transport, clock: clock, endpoint: endpoint, description: description, limits: limits)
        guard let device = MediaOutputDevice(
            id: description.udn, displayName: description.friendlyName, capabilities: .urlPlayback,
            deviceType: Self.deviceType(description, sinks: []), volumeControl: .absolute, canMute: true, requiredNetworkEndpoints: [endpoint])
        else { throw MediaDeviceError(.discoveryFailed, "\(endpoint.id) has no name") }
        return Renderer(
            endpoint: endpoint, description: description, sinks: [], volumeRange: 0...100, renderingActions: [], transportActions: [],
            device: device, client: client)
    }

    /// `GetProtocolInfo`'s sinks; the device type follows them (video sinks: a TV).
    func withSinks() async -> Renderer {
        var renderer = self
        let answer = try? await client.call(ConnectionManagerAction.getProtocolInfo)
        renderer.sinks = ProtocolInfo.parseList(answer?["Sink"] ?? "")
        renderer.device.deviceType = Self.deviceType(description, sinks: renderer.sinks)
        // A renderer that lists LPCM or WAV also plays the box's own audio, as a live stream.
        if UPnPRendererExtension.takesLiveAudio(renderer.sinks) { renderer.device.capabilities.insert(.realtimeAudioStreaming) }
        // One that lists an MPEG transport stream shows the box's video, encoded live.
        if UPnPRendererExtension.videoSink(in: renderer.sinks) != nil { renderer.device.capabilities.insert(.realtimeVideoStreaming) }
        return renderer
    }

    /// The SCPDs: the volume range and which actions exist (volume and mute
    /// control, SetNextAVTransportURI). An SCPD that cannot be read leaves the defaults.
    func withServiceDescriptions() async -> Renderer {
        var renderer = self
        async let renderingSCPD = try? client.get(description.service("RenderingControl")!.scpdURL)
        async let transportSCPD = try? client.get(description.service("AVTransport")!.scpdURL)
        let rendering = await renderingSCPD.flatMap { try? ServiceDescription.parse($0) } ?? ServiceDescription()
        let avTransport = await transportSCPD.flatMap { try? ServiceDescription.parse($0) } ?? ServiceDescription()
        renderer.volumeRange = rendering.ranges["Volume"] ?? 0...100
        renderer.renderingActions = rendering.actions
        renderer.transportActions = avTransport.actions
        renderer.device.volumeControl = rendering.actions.isEmpty || rendering.actions.contains("SetVolume") ? .absolute : .none
        renderer.device.canMute = rendering.actions.isEmpty || rendering.actions.contains("SetMute")
        return renderer
    }

    /// A TV when its name says so or it takes video; otherwise a speaker.
    static func deviceType(_ description: DeviceDescription, sinks: [ProtocolInfo]) -> MediaOutputDevice.DeviceType {
        let text = "\(description.friendlyName) \(description.manufacturer) \(description.modelName)".lowercased()
        let words = text.split { !$0.isLetter && !$0.isNumber }
        let tvHints: Set<Substring> = ["tv", "television", "bravia", "projector", "display", "smarttv", "androidtv"]
        if words.contains(where: { tvHints.contains($0) }) { return .tv }
        let speakerHints: Set<Substring> = ["speaker", "soundbar", "audio", "amplifier", "receiver", "radio", "sonos"]
        if words.contains(where: { speakerHints.contains($0) }) { return .speaker }
        return sinks.contains { $0.contentFormat.hasPrefix("video/") } ? .tv : .speaker
    }

    /// A level 0.0–1.0 in the device's volume units, clamped to its range.
    func deviceVolume(_ level: Float) -> Int {
        let clamped = level.isFinite ? min(max(level, 0), 1) : 0
        let span = Float(volumeRange.upperBound - volumeRange.lowerBound)
        return volumeRange.lowerBound + Int((clamped * span).rounded())
    }

    /// A device volume as 0.0–1.0.
    func level(_ deviceVolume: Int) -> Float {
        let span = volumeRange.upperBound - volumeRange.lowerBound
        guard span > 0 else { return 0 }
        let clamped = min(max(deviceVolume, volumeRange.lowerBound), volumeRange.upperBound)
        return Float(clamped - volumeRange.lowerBound) / Float(span)
    }
}

/// MIME types of the files people play from disk.
enum MediaTypes {
    static let byExtension: [String: String] = [
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "flac": "audio/flac", "ogg": "audio/ogg", "oga": "audio/ogg",
        "opus": "audio/ogg", "wav": "audio/wav", "mp4": "video/mp4", "m4v": "video/mp4", "mkv": "video/x-matroska",
        "webm": "video/webm", "avi": "video/x-msvideo", "ts": "video/mp2t", "mov": "video/quicktime", "jpg": "image/jpeg",
        "jpeg": "image/jpeg", "png": "image/png",
    ]

    static func mimeType(forPath path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return "application/octet-stream" }
        return byExtension[path[path.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }
}
