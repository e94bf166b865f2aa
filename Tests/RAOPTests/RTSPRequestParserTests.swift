import RAOP
import Testing

/// An AirPlay 2 receiver's event channel, on bytes: requests split anywhere, answered by CSeq;
/// anything that is not a request refused for good.
@Suite struct RTSPRequestParserTests {
    @Test func requestsSplitAnywhereAreReadWithTheirBodies() throws {
        let bytes = Array("POST /command RTSP/1.0\r\nCSeq: 3\r\nContent-Length: 4\r\n\r\nabcdGET /info RTSP/1.0\r\nCSeq: 4\r\n\r\n".utf8)
        for split in [0, 1, 10, 40, 56, bytes.count] {
            var parser = RTSPRequestParser()
            let requests = try parser.consume(bytes[..<split]) + parser.consume(bytes[split...])
            #expect(requests.map(\.method) == ["POST", "GET"] && requests.map(\.uri) == ["/command", "/info"], "split at \(split)")
            #expect(requests.first?.body == Array("abcd".utf8))
            #expect(requests.last?.headers.first { $0.0 == "cseq" }?.1 == "4")
        }
        #expect(RTSPRequestParser.okResponse(cseq: " 4") == Array("RTSP/1.0 200 OK\r\nCSeq: 4\r\nServer: MediaRoute/1.0\r\n\r\n".utf8))
    }

    @Test func anythingElseIsRefusedAndStaysRefused() {
        for bad in ["RTSP/1.0 200 OK\r\n\r\n", "POST /x HTTP/1.1\r\n\r\n", "post /x RTSP/1.0\r\n\r\n", "POST /x RTSP/1.0\r\nContent-Length: 99999999\r\n\r\n"] {
            var parser = RTSPRequestParser()
            #expect(throws: RTSPError.self, "\(bad)") { try parser.consume(Array(bad.utf8)) }
            #expect(throws: RTSPError.self) { try parser.consume(Array("GET /info RTSP/1.0\r\n\r\n".utf8)) }
        }
        // A head that never ends is refused past its bound, not kept.
        var parser = RTSPRequestParser()
        #expect(throws: RTSPError.self) { try parser.consume([UInt8](repeating: 65, count: RTSPResponseParser.maximumHeadBytes + 2)) }
    }
}
