import DBus
import Foundation
import MPRIS
import MediaRouteTestSupport
import NowPlaying
import Testing
import MediaRouteTesting

struct ArtAttributes: RemoteMediaSessionAttributes {
    var id: String
    var title: String
}

/// Artwork that only a loader can produce (no URL); counts the loads.
final class ArtSession: RemoteMediaSessionRepresentable {
    let id: String
    let title = Locked("")
    let loads: Locked<Int>

    init(_ attributes: ArtAttributes, loads: Locked<Int>) {
        id = attributes.id
        title.withLock { $0 = attributes.title }
        self.loads = loads
    }

    func update(_ attributes: ArtAttributes) async { title.withLock { $0 = attributes.title } }

    var content: (any MediaContentRepresentable)? {
        let loads = self.loads
        return MusicContent(id: "song", songTitle: title.value, duration: .live, artwork: Artwork(id: "cover/1") { _ in
            loads.withLock { $0 += 1 }
            return try ArtworkRepresentation(data: Data([0x89, 0x50, 0x4E, 0x47]), mimeType: "image/png")
        })
    }

    var playbackSnapshot: MediaPlaybackSnapshot? { MediaPlaybackSnapshot(state: .playing(), elapsedTime: 0, timestamp: Date()) }
    var commands: [MediaCommand] { [] }
    var devices: [RemoteMediaDevice] { [] }
}

struct ArtExtension: RemoteMediaSessionExtension {
    let loads = Locked(0)
    func session(_ attributes: ArtAttributes) async throws -> ArtSession { ArtSession(attributes, loads: loads) }
}

@Suite(.timeLimit(.minutes(1)), .enabled(if: PrivateBus.isAvailable))
struct ArtworkTests {
    @Test func artworkWithoutAURLIsLoadedOnceAndOfferedAsAFile() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let connection = try await DBusConnection.connect(to: .address(bus.address))
        defer { connection.close() }
        let center = NowPlayingCenter()
        let ext = ArtExtension()
        try await center.register(ext)
        let directory = bus.directory + "/art"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bridge = MPRISBridge(center: center, connection: connection, configuration: .init(artworkDirectory: directory))
        try await bridge.start()
        defer { Task { await bridge.stop() } }
        #expect(ext.loads.value == 0, "nothing shown yet, nothing loaded")
        let session = try await RemoteMediaSession.start(attributes: ArtAttributes(id: "A", title: "one"), in: center)

        @Sendable func metadata() async -> [String: DBusValue] {
            guard let reply = try? await connection.call(
                destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: "org.freedesktop.DBus.Properties",
                member: "Get", [.string(MPRISNames.player), .string("Metadata")]),
                case .dictionary(_, _, let entries) = reply.first?.unwrapped
            else { return [:] }
            var values: [String: DBusValue] = [:]
            for entry in entries { if let key = entry.key.string { values[key] = entry.value.unwrapped } }
            return values
        }
        let expected = URL(fileURLWithPath: directory + "/cover_2f1").absoluteString
        #expect(await eventually { await metadata()["mpris:artUrl"] == .string(expected) })
        #expect(FileManager.default.contents(atPath: directory + "/cover_2f1") == Data([0x89, 0x50, 0x4E, 0x47]))
        #expect(await metadata()["mediaroute:live"] == .bool(true))
        #expect(await metadata()["mpris:length"] == nil, "live content has no length")
        try await session.update(ArtAttributes(id: "A", title: "two"))
        #expect(await eventually { await metadata()["xesam:title"] == .string("two") })
        #expect(ext.loads.value == 1)
        #expect(try await connection.call(
            destination: MPRISNames.defaultBusName, path: MPRISNames.objectPath, interface: "org.freedesktop.DBus.Properties",
            member: "Get", [.string(MPRISNames.player), .string("CanControl")]).first?.unwrapped == .bool(false))
    }
}
