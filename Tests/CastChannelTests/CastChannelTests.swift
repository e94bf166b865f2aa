import CastChannel
import Testing

/// A CastMessage written field by field from the protobuf wire format, independent of the
/// generated code: tag, varint or length-delimited value.
private func handEncoded(source: String, destination: String, namespace: String, text: String) -> [UInt8] {
    func varint(_ value: Int) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7F)
            value >>= 7
            if value != 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value != 0
        return bytes
    }
    func string(_ field: Int, _ text: String) -> [UInt8] {
        [UInt8(field << 3 | 2)] + varint(text.utf8.count) + Array(text.utf8)
    }
    return [0x08, 0x00] + string(2, source) + string(3, destination) + string(4, namespace) + [0x28, 0x00] + string(6, text)
}

private func framed(_ body: [UInt8]) -> [UInt8] {
    let length = UInt32(body.count)
    return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
}

@Suite struct CastFramingTests {
    @Test func aMessageIsItsLengthThenTheProtobufFieldsInOrder() throws {
        let envelope = CastEnvelope(sourceID: "sender-0", destinationID: "receiver-0", namespace: CastNamespace.heartbeat, json: #"{"type":"PING"}"#)
        let expected = framed(handEncoded(source: "sender-0", destination: "receiver-0", namespace: CastNamespace.heartbeat, text: #"{"type":"PING"}"#))
        #expect(try envelope.framed() == expected)
    }

    @Test func messagesSplitAnywhereComeOutWholeAndInOrder() throws {
        let first = framed(handEncoded(source: "receiver-0", destination: "sender-0", namespace: CastNamespace.heartbeat, text: #"{"type":"PONG"}"#))
        let second = framed(handEncoded(source: "web-5", destination: "sender-7", namespace: "urn:x-cast:com.example.app", text: "héllo"))
        let stream = first + second
        for cut in 0...stream.count {
            var decoder = CastFrameDecoder()
            var out: [CastEnvelope] = []
            decoder.append(Array(stream[..<cut]))
            while let next = try decoder.next() { out.append(next) }
            decoder.append(Array(stream[cut...]))
            while let next = try decoder.next() { out.append(next) }
            #expect(out.map(\.namespace) == [CastNamespace.heartbeat, "urn:x-cast:com.example.app"], "cut at \(cut)")
            #expect(out.last?.text == "héllo")
            #expect(out.last?.sourceID == "web-5")
            #expect(decoder.bufferedCount == 0)
        }
    }

    @Test func anOversizedLengthIsRefusedBeforeItsBytesAndForEverAfter() {
        var decoder = CastFrameDecoder()
        decoder.append([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        #expect(throws: CastChannelError.self) { try decoder.next() }
        #expect(decoder.bufferedCount == 0, "nothing of it is kept")
        decoder.append(framed(handEncoded(source: "a", destination: "b", namespace: "c", text: "d")))
        #expect(decoder.bufferedCount == 0)
        #expect { try decoder.next() } throws: { ($0 as? CastChannelError)?.code == .oversizedMessage }
    }

    @Test func truncatedOrIncompleteProtobufIsATypedError() {
        let body = handEncoded(source: "sender-0", destination: "receiver-0", namespace: CastNamespace.receiver, text: "{}")
        for length in [1, 5, body.count - 1] {
            var decoder = CastFrameDecoder()
            decoder.append(framed(Array(body[..<length])))
            #expect(throws: CastChannelError.self, "\(length) bytes") { try decoder.next() }
        }
        // Every field there but the required payload type.
        let noPayloadType = Array(body[..<(body.count - 4)]).filter { _ in true }
        #expect(throws: CastChannelError.self) { try CastEnvelope(protobuf: noPayloadType) }
    }

    @Test func aMessageOverTheLimitIsNotSent() {
        let envelope = CastEnvelope(
            sourceID: "sender-0", destinationID: "receiver-0", namespace: "urn:x-cast:com.example.app", json: String(repeating: "x", count: 70_000))
        #expect { try envelope.framed() } throws: { ($0 as? CastChannelError)?.code == .unencodable }
    }
}

@Suite struct CastRequestTests {
    @Test func requestsAreTheJSONReceiversExpect() {
        #expect(CastRequest.connect.json() == #"{"type":"CONNECT"}"#)
        #expect(CastRequest.launch(appID: "CC1AD845", requestID: 3).json() == #"{"appId":"CC1AD845","requestId":3,"type":"LAUNCH"}"#)
        #expect(CastRequest.setVolume(level: 1.7, muted: nil, requestID: 4).json() == #"{"requestId":4,"type":"SET_VOLUME","volume":{"level":1}}"#)
        #expect(CastRequest.setVolume(level: nil, muted: true, requestID: 5).json() == #"{"requestId":5,"type":"SET_VOLUME","volume":{"muted":true}}"#)
        #expect(CastRequest.seek(mediaSessionID: 2, to: .nan, requestID: 6).json() == #"{"currentTime":0,"mediaSessionId":2,"requestId":6,"type":"SEEK"}"#)
        #expect(CastRequest.ping.namespace == CastNamespace.heartbeat)
        #expect(CastRequest.queueInsert([], mediaSessionID: 1, requestID: 9).namespace == CastNamespace.media)
    }

    @Test func loadCarriesMusicMetadataForAudioAndGenericForVideo() {
        let song = CastMediaItem(
            contentID: "http://10.0.0.2/a.mp3", contentType: "audio/mpeg", title: "Song", artist: "Band", album: "Record", imageURL: "http://10.0.0.2/c.jpg",
            duration: 180)
        let load = CastRequest.load(song, sessionID: "S1", autoplay: true, currentTime: 0, requestID: 7).json()
        #expect(load.contains(#""metadata":{"albumName":"Record","artist":"Band","images":[{"url":"http://10.0.0.2/c.jpg"}],"metadataType":3,"title":"Song"}"#))
        #expect(load.contains(#""contentId":"http://10.0.0.2/a.mp3""#))
        #expect(load.contains(#""sessionId":"S1""#) && load.contains(#""streamType":"BUFFERED""#) && load.contains(#""duration":180"#))
        let film = CastMediaItem(contentID: "http://h/v.mp4", contentType: "video/mp4", streamType: .live, title: "Film", artist: "Studio")
        let other = CastRequest.load(film, sessionID: "S", autoplay: false, currentTime: 5, requestID: 8).json()
        #expect(other.contains(#""metadata":{"metadataType":0,"subtitle":"Studio","title":"Film"}"#))
        #expect(other.contains(#""streamType":"LIVE""#) && other.contains(#""autoplay":false"#) && other.contains(#""currentTime":5"#))
    }
}

@Suite struct CastReplyTests {
    private func reply(_ namespace: String, _ json: String) throws -> CastReply {
        try CastReply.decode(CastEnvelope(sourceID: "receiver-0", destinationID: "sender-0", namespace: namespace, json: json))
    }

    @Test func receiverStatusNamesItsApplicationsAndVolume() throws {
        let status = try reply(CastNamespace.receiver, """
            {"requestId":2,"status":{"applications":[{"appId":"CC1AD845","displayName":"Default Media Receiver","isIdleScreen":false,
            "namespaces":[{"name":"urn:x-cast:com.google.cast.media"}],"sessionId":"7E2F","statusText":"Ready","transportId":"web-9"}],
            "volume":{"controlType":"attenuation","level":0.25,"muted":false,"stepInterval":0.05}},"type":"RECEIVER_STATUS"}
            """)
        guard case .receiverStatus(let body, let id) = status else { Issue.record("\(status)"); return }
        #expect(id == 2)
        #expect(body.application(session: "7E2F")?.transportId == "web-9")
        #expect(body.volume == CastVolume(level: 0.25, muted: false))
    }

    @Test func mediaStatusCarriesStatePositionAndIdleReason() throws {
        let status = try reply(CastNamespace.media, """
            {"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":1,"playbackRate":1,"playerState":"IDLE","idleReason":"FINISHED",
            "currentTime":179.5,"media":{"contentId":"x","duration":180.0}}]}
            """)
        let information = try mediaInformation()
        #expect(information?.duration == 180 && information?.contentId == "x")
        #expect(status == .mediaStatus([CastMediaStatus(
            mediaSessionId: 1, playerState: "IDLE", currentTime: 179.5, playbackRate: 1, idleReason: "FINISHED",
            media: information)], requestID: nil), "request id 0 is unsolicited")
    }

    private func mediaInformation() throws -> CastMediaInformation? {
        guard case .mediaStatus(let list, _) = try reply(CastNamespace.media, #"{"type":"MEDIA_STATUS","status":[{"mediaSessionId":1,"playerState":"IDLE","media":{"contentId":"x","duration":180.0}}]}"#)
        else { return nil }
        return list.first?.media
    }

    @Test func failuresAndRefusalsAreTyped() throws {
        #expect(try reply(CastNamespace.media, #"{"type":"LOAD_FAILED","requestId":5,"detailedErrorCode":104}"#) == .loadFailed(type: "LOAD_FAILED", reason: "104", requestID: 5))
        #expect(try reply(CastNamespace.receiver, #"{"type":"LAUNCH_ERROR","reason":"NOT_FOUND","requestId":3}"#) == .launchError(reason: "NOT_FOUND", requestID: 3))
        #expect(try reply(CastNamespace.media, #"{"type":"INVALID_REQUEST","reason":"INVALID_COMMAND","requestId":4}"#)
            == .refused(type: "INVALID_REQUEST", reason: "INVALID_COMMAND", requestID: 4))
        #expect(try reply(CastNamespace.connection, #"{"type":"CLOSE"}"#) == .close)
        #expect(try reply(CastNamespace.heartbeat, #"{"type":"PING"}"#) == .ping)
        #expect(try reply(CastNamespace.receiver, #"{"type":"DEVICE_UPDATED","requestId":1.5}"#) == .unhandled(namespace: CastNamespace.receiver, type: "DEVICE_UPDATED"))
    }

    @Test func hostilePayloadsAreInvalidNotCrashes() {
        let bad = [
            (CastNamespace.receiver, "not json"), (CastNamespace.receiver, #"{"type":"RECEIVER_STATUS"}"#),
            (CastNamespace.media, #"{"type":"MEDIA_STATUS","status":[{"playerState":"PLAYING"}]}"#),
            (CastNamespace.media, #"{"type":"MEDIA_STATUS","status":[{"mediaSessionId":99999999999999999999999,"playerState":"PLAYING"}]}"#),
            (CastNamespace.heartbeat, #"{"type":7}"#), (CastNamespace.heartbeat, "[]"), (CastNamespace.media, #"{"type":"MEDIA_STATUS","status":{"#),
        ]
        for (namespace, json) in bad {
            #expect(throws: CastChannelError.self, "\(json)") { try reply(namespace, json) }
        }
        let binary = CastEnvelope(sourceID: "r", destinationID: "s", namespace: CastNamespace.media, payload: .binary([1, 2]))
        #expect { try CastReply.decode(binary) } throws: { ($0 as? CastChannelError)?.code == .invalidPayload }
    }

    @Test func anApplicationsOwnNamespaceIsHandedOnAsItIs() throws {
        #expect(try reply("urn:x-cast:com.example.game", "not json at all") == .application(namespace: "urn:x-cast:com.example.game", payload: .text("not json at all")))
        #expect(CastNamespace.isApplicationNamespace("urn:x-cast:com.example.game"))
        #expect(!CastNamespace.isApplicationNamespace(CastNamespace.heartbeat))
        #expect(!CastNamespace.isApplicationNamespace("urn:x-cast:bad space"))
        #expect(!CastNamespace.isApplicationNamespace("http://example.com"))
    }
}

@Suite struct CastDeviceRecordTests {
    @Test func aTelevisionASpeakerAndAGroupFromTheirTXT() throws {
        let tv = try #require(CastDeviceRecord(txt: [
            "id": "4C4C4544004C4B10805AB8C04F4E4A31", "fn": " Living Room TV ", "md": "Chromecast", "ca": "4101", "rs": "YouTube", "st": "1", "ve": "05",
        ]))
        #expect(tv.friendlyName == "Living Room TV")
        #expect(tv.showsVideo && !tv.isGroup)
        #expect(tv.udn == "uuid:4c4c4544-004c-4b10-805a-b8c04f4e4a31")
        #expect(tv.runningApplication == "YouTube" && tv.status == 1)
        let speaker = try #require(CastDeviceRecord(txt: ["id": "aa", "fn": "Kitchen", "md": "Google Nest Mini", "ca": "2052"]))
        #expect(!speaker.showsVideo && speaker.capabilities.contains(.audioOut))
        #expect(speaker.udn == nil)
        let group = try #require(CastDeviceRecord(txt: ["id": "bb", "fn": "Downstairs", "md": "Google Cast Group", "ca": "2084"]))
        #expect(group.isGroup)
        #expect(CastDeviceRecord(txt: ["fn": "No id"]) == nil)
        #expect(CastDeviceRecord(txt: ["id": "cc", "ca": "99999999999999999999999"])?.capabilities == [], "an absurd ca is none, not a trap")
    }
}
