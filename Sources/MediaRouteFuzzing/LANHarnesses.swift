import LANTransport
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Transport
import HTTPServing
import LiveStreaming
import RoutingModel
import UPnPRendererExtension

/// SSDP and mDNS datagrams from anyone on the LAN, HTTP answers from any device.
enum LANHarnesses {
    static let all: [FuzzHarness] = [ssdp, dns, httpResponse, byteRange, liveRequest]

    static let ssdp = FuzzHarness("ssdp", "SSDP datagrams (M-SEARCH answers, NOTIFY)", maximumLength: 16 * 1024) { bytes in
        guard let message = try? SSDPMessage.parse(bytes) else { return nil }
        if bytes.count > SSDPMessage.maximumSize { return "parsed a datagram of \(bytes.count) bytes, over the limit" }
        _ = (message.udn, message.maxAge, message.target, message.notificationSubtype)
        return nil
    }

    static let dns = FuzzHarness("dns", "mDNS/DNS messages (answers to our queries, announcements)", maximumLength: 9_000) { bytes in
        guard let message = try? DNSMessage.decode(bytes) else { return nil }
        // Our encoder must take whatever the decoder gives (the browser re-announces nothing,
        // but a trap here would still be a crash on a decoded value).
        _ = message.encoded()
        // The box's own responder answers whatever question comes: its answer must encode and
        // read back, and a response is never answered.
        if let answer = boxAdvertisement.answer(to: message, address: "192.0.2.10") {
            if message.isResponse { return "answered a response" }
            guard (try? DNSMessage.decode(answer.encoded())) != nil else { return "an answer that does not decode" }
        }
        return nil
    }

    static let boxAdvertisement = MDNSServiceAdvertisement(
        instance: "Fuzz Box", serviceType: "_mediaroute._udp", port: 7391, txt: ["id=fuzz"], host: "mediaroute-fuzz")

    /// An answer as the client's pipeline reads it: NIO's decoder, then our bounded collector.
    static let httpResponse = FuzzHarness("http-response", "HTTP answers to our requests (descriptions, SOAP, media)") { bytes in
        let limit = 4 * 1024
        let channel = EmbeddedChannel()
        let promise = channel.eventLoop.makePromise(of: HTTPResponse.self)
        do {
            try channel.pipeline.syncOperations.addHTTPClientHandlers()
            let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/description.xml")
            try channel.pipeline.syncOperations.addHandler(ResponseCollector(limit: limit, promise: promise, request: head, body: []))
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        } catch {
            // A decoding error reaches the collector through errorCaught; nothing more to read.
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)  // the device hangs up: whatever is half-read fails
        promise.fail(TransportError(.connectionLost, "never answered"))  // a no-op when the collector answered
        guard case .success(let response)? = promise.futureResult.poll() else { return nil }
        if response.body.count > limit { return "kept \(response.body.count) body bytes, limit \(limit)" }
        return nil
    }

    /// A device's `Range:` header against a live stream we serve (the first byte picks the
    /// framing and the encoding): any answer is 200, 206 or 416, and what a resumed fetch is led
    /// in by is never more than the header or a frame.
    static let liveRequest = FuzzHarness("live-request", "Range headers of devices fetching a live stream, resuming or not", maximumLength: 1024) { bytes in
        guard let first = bytes.first else { return nil }
        let framings: [HTTPLiveFraming] = [.closeDelimited, .chunked, .contentLength(1 << 20), .contentLength(10)]
        let encoding: LiveAudioEncoding = first & 4 == 0 ? .wav : .lpcm
        let stream = LiveAudioStream(
            encoding: encoding, sampleRate: 44_100, channels: 1 + Int(first >> 3 & 1),
            configuration: LiveAudioStream.Configuration(prime: .milliseconds(Int64(first >> 4) * 10), kept: .milliseconds(50), framing: framings[Int(first & 3)]),
            now: { .seconds(1) })
        stream.append(SampleBuffer(format: .cdAudio, presentationTime: .seconds(1), frameCount: 441, data: [UInt8](repeating: 1, count: 1_764)))
        let header = String(decoding: bytes.dropFirst(), as: UTF8.self)
        let response = stream.response(to: HTTPServerRequest(method: "GET", path: "/", headers: ["range": header]))
        guard [200, 206, 416].contains(response.status) else { return "answered \(response.status)" }
        guard case .live(let body, _) = response.body else { return response.status == 416 ? nil : "a \(response.status) without a live body" }
        defer { body.close() }
        // The lead-in comes first, whole: the header's rest or the zeros before a frame.
        guard case .bytes(let lead) = body.read(maximum: 1 << 16) else { return nil }
        if lead.count > max(44, 4) + 1_764 { return "\(lead.count) bytes at once from a stream that holds 1 764" }
        return nil
    }

    /// A renderer's `Range:` header against a file we serve.
    static let byteRange = FuzzHarness("http-range", "Range headers of renderers fetching served media", maximumLength: 1024) { bytes in
        guard bytes.count >= 2 else { return nil }
        let total = Int(bytes[0]) << 8 | Int(bytes[1])
        let header = String(decoding: bytes.dropFirst(2), as: UTF8.self)
        guard let range = ByteRange.parse(header, total: total) else { return nil }
        if range.lowerBound < 0 || range.upperBound >= total { return "range \(range) outside a file of \(total) bytes" }
        return nil
    }
}

extension EventLoopFuture {
    /// The result if the future is already complete (embedded loops run everything at once).
    fileprivate func poll() -> Result<Value, any Error>? where Value: Sendable {
        let result = NIOLockedValueBox<Result<Value, any Error>?>(nil)
        whenComplete { outcome in result.withLockedValue { $0 = outcome } }
        return result.withLockedValue { $0 }
    }
}
