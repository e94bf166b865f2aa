import Foundation
import RoutingModel
import Testing

@testable import RouteSystem

/// ``SessionRules`` on values.
@Suite struct SessionRulesTests {
    static func route(_ capabilities: OutputDeviceDescription.Capabilities) -> ActiveRoute {
        ActiveRoute(
            session: MediaOutputSession(deviceID: "tv"), protocolType: MediaSharingProtocol("org.mediaroute.upnp", displayName: "UPnP/DLNA"),
            device: OutputDeviceDescription(id: "tv", displayName: "Den TV", capabilities: capabilities)!)
    }

    @Test func aSessionStartsOnAnIdleURLDeviceWithASchemeDevicesFetch() throws {
        let url = try #require(URL(string: "http://192.0.2.2/a.mp3"))
        try SessionRules.checkStart(of: url, on: Self.route([.urlPlayback]), busy: false)
        #expect(throws: MediaDeviceError(.unsupported, "Den TV does not play URLs")) {
            try SessionRules.checkStart(of: url, on: Self.route([.realtimeAudioStreaming]), busy: false)
        }
        #expect(throws: MediaDeviceError(.sessionFailed, "Den TV is already playing")) {
            try SessionRules.checkStart(of: url, on: Self.route([.urlPlayback]), busy: true)
        }
        #expect(throws: MediaDeviceError.self) { try SessionRules.checkStart(of: URL(string: "ftp://h/x")!, on: Self.route([.urlPlayback]), busy: false) }
    }

    @Test func theAppsWordsBeatTheDevicesGuessesButNotItsMeasurements() {
        let reported = PlaybackMetadata(title: "a.mp3", duration: 181, isLive: false, contentURL: URL(string: "http://h/a.mp3"))
        let described = PlaybackMetadata(title: "Song", artist: "Artist", duration: 180, isLive: true)
        let merged = SessionRules.merged(reported: reported, described: described)
        #expect(merged.title == "Song" && merged.artist == "Artist" && merged.duration == 181 && merged.isLive)
        #expect(merged.contentURL == URL(string: "http://h/a.mp3"))
    }

    @Test func aChannelWithNothingAtTheOtherEndIsARefusal() throws {
        let route = Self.route([.urlPlayback])
        try SessionRules.checkRouteData(receivedByExtension: true, protocolName: "UPnP/DLNA", on: route)
        #expect(throws: MediaDeviceError(.unsupported, "UPnP/DLNA takes no data on the route channel of Den TV")) {
            try SessionRules.checkRouteData(receivedByExtension: false, protocolName: "UPnP/DLNA", on: route)
        }
        #expect(try SessionRules.sessionDataTarget(playing: true, application: "com.example.player", on: route) == "com.example.player")
        #expect(throws: MediaDeviceError(.sessionFailed, "no application session runs on Den TV")) {
            try SessionRules.sessionDataTarget(playing: true, application: nil, on: route)
        }
    }
}
