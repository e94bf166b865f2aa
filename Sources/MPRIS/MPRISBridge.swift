#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import DBus
public import Logging
public import NowPlaying

/// Publishes the primary Now Playing session as an MPRIS player, so every
/// MPRIS client (playerctl, desktop shells, home-automation bridges) shows it
/// and controls it.
///
/// Properties follow the center's events as `PropertiesChanged` (Position
/// excepted: clients extrapolate it, and `Seeked` is emitted whenever it jumps).
/// Can* flags follow the session's enabled commands and are all false when no
/// command is enabled or no session is active.
public actor MPRISBridge {
    public struct Configuration: Sendable {
        /// The well-known name to own (`org.mpris.MediaPlayer2.mediaroute`).
        public var busName: String
        /// `Identity` of the root interface.
        public var identity: String
        /// Where artwork produced by a loader (not a URL) is written for clients to read; nil: not offered.
        public var artworkDirectory: String?
        /// Largest artwork file written, in bytes.
        public var maximumArtworkSize: Int

        public init(
            busName: String = MPRISNames.defaultBusName, identity: String = "MediaRoute", artworkDirectory: String? = nil,
            maximumArtworkSize: Int = 4 << 20
        ) {
            self.busName = busName
            self.identity = identity
            self.artworkDirectory = artworkDirectory
            self.maximumArtworkSize = maximumArtworkSize
        }
    }

    public let center: NowPlayingCenter
    private let connection: DBusConnection
    private let configuration: Configuration
    private let logger: Logger
    private let now: @Sendable () -> Date
    private(set) var state = MPRISState(nil)
    private var artURLs: [String: String] = [:]
    private var artworkLoads: Set<String> = []
    private var follower: Task<Void, Never>?
    private var ownsName = false

    public init(
        center: NowPlayingCenter, connection: DBusConnection, configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "mediaroute.mpris"), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.center = center
        self.connection = connection
        self.configuration = configuration
        self.logger = logger
        self.now = now
    }

    /// Exports the player, follows the center, and takes the bus name.
    /// - Throws: ``DBusError`` when the name is owned by someone else.
    public func start() async throws {
        await connection.export(MPRISPlayerObject(bridge: self, identity: configuration.identity).object, at: MPRISNames.objectPath)
        let events = await center.events()
        follower = Task { [weak self] in
            for await event in events { await self?.handle(event) }
        }
        guard try await connection.requestName(configuration.busName) else {
            stopFollowing()
            throw DBusError(name: "org.freedesktop.DBus.Error.AddressInUse", message: "\(configuration.busName) is already owned")
        }
        ownsName = true
        logger.info("MPRIS player published", metadata: ["name": "\(configuration.busName)"])
    }

    /// Gives the name up and removes the player.
    public func stop() async {
        stopFollowing()
        if ownsName { try? await connection.releaseName(configuration.busName) }
        ownsName = false
    }

    private func stopFollowing() {
        follower?.cancel()
        follower = nil
        connection.unexport(MPRISNames.objectPath)
    }

    // MARK: Following the center

    var sessionID: String? { state.info?.sessionID }

    private func handle(_ event: NowPlayingEvent) async {
        switch event {
        case .primaryChanged(let id):
            let info: NowPlayingInfo? = if let id { await center.session(id) } else { nil }
            show(info, seeked: false)
        case .sessionStarted(let info) where info.sessionID == sessionID:
            show(info, seeked: false)
        case .sessionUpdated(let info, let previous) where info.sessionID == sessionID:
            show(info, seeked: info.positionJumped(from: previous, at: now()))
        case .sessionEnded(let id) where id == sessionID:
            show(nil, seeked: false)
        default:
            break
        }
    }

    private func show(_ info: NowPlayingInfo?, seeked: Bool) {
        let before = state
        state = MPRISState(info)
        loadArtworkIfNeeded()
        let oldPlayer = before.playerProperties(artURL: artURL(for: before))
        let newPlayer = state.playerProperties(artURL: artURL(for: state))
        let changed = newPlayer.filter { oldPlayer[$0.key] != $0.value }
        if !changed.isEmpty {
            connection.emitPropertiesChanged(path: MPRISNames.objectPath, interface: MPRISNames.player, changed: changed)
        }
        let oldExtras = before.extraProperties
        let changedExtras = state.extraProperties.filter { oldExtras[$0.key] != $0.value }
        if !changedExtras.isEmpty {
            connection.emitPropertiesChanged(path: MPRISNames.objectPath, interface: MPRISNames.extras, changed: changedExtras)
        }
        if seeked {
            connection.emitSignal(
                path: MPRISNames.objectPath, interface: MPRISNames.player, member: "Seeked",
                [.int64(MPRISState.microseconds(position))])
        }
    }

    // MARK: Artwork

    private func artURL(for state: MPRISState) -> String? {
        guard let artwork = state.info?.content?.artwork else { return nil }
        if let url = artwork.url { return url.absoluteString }
        return artURLs[artwork.id]
    }

    /// Loads artwork that has no URL, once per id, and writes it where clients can read it.
    private func loadArtworkIfNeeded() {
        guard let directory = configuration.artworkDirectory, let artwork = state.info?.content?.artwork,
            artwork.url == nil, let loader = artwork.loader, artURLs[artwork.id] == nil, !artworkLoads.contains(artwork.id)
        else { return }
        artworkLoads.insert(artwork.id)
        let limit = configuration.maximumArtworkSize
        let file = directory + "/" + MPRISState.pathElement(artwork.id)
        Task {
            do {
                let representation = try await loader(Artwork.Size(width: 600, height: 600))
                guard representation.data.count <= limit else { throw RemoteMediaSessionError(.invalidAttributes, "artwork over \(limit) bytes") }
                try representation.data.write(to: URL(fileURLWithPath: file), options: .atomic)
                self.artworkLoaded(id: artwork.id, url: URL(fileURLWithPath: file).absoluteString)
            } catch {
                self.logger.notice("artwork not loaded", metadata: ["artwork": "\(artwork.id)", "error": "\(error)"])
            }
        }
    }

    private func artworkLoaded(id: String, url: String) {
        artURLs[id] = url
        if artURLs.count > 16, let stale = artURLs.keys.first(where: { $0 != id }) { artURLs.removeValue(forKey: stale) }
        if state.info?.content?.artwork?.id == id {
            connection.emitPropertiesChanged(
                path: MPRISNames.objectPath, interface: MPRISNames.player, changed: ["Metadata": state.metadata(artURL: url)])
        }
    }

    var metadata: DBusValue { state.metadata(artURL: artURL(for: state)) }

    var position: Double { state.position(at: now()) }

    // MARK: Commands from clients

    @discardableResult
    func perform(_ request: MediaCommandRequest) async -> MediaCommandStatus {
        guard let id = sessionID else { return .noActionableNowPlayingItem }
        return await center.perform(request, onSession: id)
    }

    /// MPRIS `Seek`: relative; before the start seeks to 0, past the end goes to the next track.
    func seek(by offset: Double) async {
        guard offset.isFinite, state.canSeek, let info = state.info else { return }
        let target = position + offset
        if let length = state.length, target > length {
            if state.canGoNext { await perform(.nextTrack) }
            return
        }
        if info.isEnabled(.seekToPosition) {
            await perform(.seekToPosition(max(target, 0)))
        } else {
            await perform(offset >= 0 ? .skipForward(offset) : .skipBackward(-offset))
        }
    }

    /// MPRIS `SetPosition`: ignored for a stale track id or a position outside the track.
    func setPosition(_ position: Double, track: DBusObjectPath) async {
        guard state.canSeek, track == state.trackID, position >= 0 else { return }
        if let length = state.length, position > length { return }
        await perform(.seekToPosition(position))
    }

    /// MPRIS `Rate`: 0 pauses; other values must lie within Minimum/MaximumRate.
    func setRate(_ rate: Double) async throws {
        if rate == 0 {
            await perform(.pause)
            return
        }
        guard rate >= state.minimumRate, rate <= state.maximumRate else {
            throw MPRISPlayerObject.invalidArgs("Rate \(rate) is outside \(state.minimumRate)…\(state.maximumRate)")
        }
        await perform(.changePlaybackRate(rate))
    }

    /// MPRIS `Volume`: clamped to 0…1, applied to the first device with an absolute volume.
    func setVolume(_ level: Double) async {
        guard let device = state.volumeDevice, let id = sessionID else { return }
        _ = await center.setVolume(Float(min(max(level, 0), 1)), device: device.id, onSession: id)
    }

    func language(_ identifier: String, enable: Bool) async -> MediaCommandStatus {
        let options = state.info?.languageOptions.groups.flatMap(\.options) ?? []
        guard let option = options.first(where: { $0.identifier == identifier }) else { return .noSuchContent }
        return await perform(enable ? .enableLanguageOption(option) : .disableLanguageOption(option))
    }
}
