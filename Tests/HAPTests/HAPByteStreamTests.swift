import Foundation
import LANTransport
import MediaRouteTestSupport
import RAOP
import Testing
import Transport
@testable import HAP

/// The encrypted stream over a real TCP connection (LANTransport) to the AirPlay 2 test
/// receiver: pair-setup in the clear, then the same stream sealed; and a stream whose bytes
/// after the switch are not sealed frames fails with a transport error.
@Suite(.timeLimit(.minutes(1))) struct HAPByteStreamTests {
    /// One RTSP exchange over `stream`, answers read from `responses`.
    static func exchange(
        _ stream: HAPByteStream, _ responses: inout AsyncThrowingStream<[UInt8], any Error>.AsyncIterator, _ parser: inout RTSPResponseParser,
        _ request: RTSPRequest, cseq: Int
    ) async throws -> RTSPResponse {
        try await stream.write(request.encoded(cseq: cseq))
        while true {
            guard let chunk = try await responses.next() else { throw TransportError(.connectionLost, "closed") }
            if let response = try parser.consume(chunk).first { return response }
        }
    }

    @Test func pairingInTheClearThenTheSameStreamSealedCarriesRTSP() async throws {
        guard AirPlay2ReceiverPeer.available() else { return }
        let receiver = try AirPlay2ReceiverPeer()
        defer { receiver.stop() }
        let endpoint = Endpoint(id: "test", transport: "lan", address: .ip(host: "127.0.0.1", port: UInt16(receiver.port), interface: nil))
        let connection = try await LANTransport().connect(to: endpoint)
        defer { Task { await connection.close() } }
        let stream = HAPByteStream(try #require(connection.byteStream))
        var responses = stream.incoming.makeAsyncIterator()
        var parser = RTSPResponseParser()
        var setup = PairSetup(mode: .transient)
        var body = setup.start()
        var cseq = 0
        var key: [UInt8]?
        while key == nil {
            cseq += 1
            let request = RTSPRequest(method: "POST", uri: "/pair-setup", headers: [("X-Apple-HKP", "4"), ("Content-Type", "application/octet-stream")], body: body)
            let response = try await Self.exchange(stream, &responses, &parser, request, cseq: cseq)
            switch try setup.receive(response.body) {
            case .send(let next): body = next
            case .paired(let result): key = result.sessionKey
            }
        }
        #expect(!stream.isEncrypted)
        stream.encrypt(with: try HAPChannel.control(sharedSecret: try #require(key)))
        let info = try await Self.exchange(stream, &responses, &parser, RTSPRequest(method: "GET", uri: "/info"), cseq: cseq + 1)
        #expect(info.status == 200)
        let plist = try PropertyListSerialization.propertyList(from: Data(info.body), format: nil) as? [String: Any]
        #expect(plist?["name"] as? String == "Test AirPlay 2")
        #expect(receiver.events.contains { $0["path"] as? String == "/info" && $0["encrypted"] as? Bool == true })
    }

    /// A byte stream whose incoming bytes the test writes.
    final class ScriptedStream: ByteStream {
        let incoming: AsyncThrowingStream<[UInt8], any Error>
        let feed: AsyncThrowingStream<[UInt8], any Error>.Continuation
        init() { (incoming, feed) = AsyncThrowingStream.makeStream(of: [UInt8].self) }
        func write(_ bytes: [UInt8]) async throws(TransportError) {}
        var localAddress: String { "127.0.0.1" }
    }

    @Test func bytesThatAreNotSealedFramesEndTheStreamWithATransportError() async throws {
        let inner = ScriptedStream()
        let stream = HAPByteStream(inner)
        var iterator = stream.incoming.makeAsyncIterator()
        inner.feed.yield(Array("RTSP/1.0 200 OK\r\n\r\n".utf8))
        #expect(try await iterator.next() == Array("RTSP/1.0 200 OK\r\n\r\n".utf8))
        stream.encrypt(with: try HAPChannel.control(sharedSecret: [UInt8](repeating: 1, count: 32)))
        inner.feed.yield([4, 0, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 16))  // a frame with a wrong tag
        await #expect(throws: TransportError.self) { _ = try await iterator.next() }
    }
}
