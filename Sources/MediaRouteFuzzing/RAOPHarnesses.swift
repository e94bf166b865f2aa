import HAP
import RAOP

/// What an AirPlay 1 receiver sends: RTSP answers on the connection, and timing and
/// resend requests on the UDP ports.
enum RAOPHarnesses {
    static let all: [FuzzHarness] = [rtspResponse, rtspRequest, raopControl, airPlay2Setup, deviceVerification]

    /// An Apple TV's answers in device verification: the first input byte chooses which — the
    /// SRP challenge (`/pair-setup-pin`'s first answer), its proof (after a fixed challenge), or
    /// `/pair-verify`'s first answer — the rest is the answer. Anything but a typed error or a
    /// next step is a finding, and so is a proof taken that the PIN cannot have made.
    static let deviceVerification = FuzzHarness("device-verification", "an Apple TV's /pair-setup-pin and /pair-verify answers", maximumLength: 4096) { bytes in
        guard let choice = bytes.first else { return nil }
        let answer = Array(bytes.dropFirst())
        let key = HAPHarnesses.controller
        var setup = DeviceVerificationSetup(pin: "5072", username: "D7:5A:98:01:82:B1", secretKey: key.secretKey, publicKey: key.publicKey)
        switch choice % 3 {
        case 0:
            if let step = try? setup.receive(answer), case .paired = step { return "device verification finished at its first answer" }
        case 1:
            let challenge = BinaryPropertyList.encode(.dictionary([("pk", .data([UInt8](repeating: 7, count: 256))), ("salt", .data([UInt8](repeating: 1, count: 16)))]))
            guard (try? setup.receive(challenge)) != nil else { return nil }
            if let step = try? setup.receive(answer) { return "a proof the TV cannot have made was taken: \(step)" }
        default:
            guard var verification = try? DeviceVerification(secretKey: key.secretKey, publicKey: key.publicKey, ephemeralSecret: [UInt8](repeating: 3, count: 32)) else { return nil }
            guard let step = try? verification.receive(answer) else { return nil }
            guard case .send(let next) = step, next.count == 68, next.prefix(4) == [0, 0, 0, 0] else { return "pair-verify answered with \(step)" }
        }
        return nil
    }

    /// The receiver's RTSP answers, fed in two pieces split where the input's first byte says.
    /// What an AirPlay 2 receiver sends on its event channel: requests, in two reads, each answered.
    static let rtspRequest = FuzzHarness("rtsp-request", "requests on an AirPlay 2 receiver's event channel, in two reads", maximumLength: 96 * 1024) { bytes in
        var parser = RTSPRequestParser()
        let split = bytes.isEmpty ? 0 : min(Int(bytes[0]) * 64, bytes.count)
        var requests: [RTSPRequest] = []
        do {
            requests += try parser.consume(bytes[..<split])
            requests += try parser.consume(bytes[split...])
        } catch {
            if (try? parser.consume([13, 10])) != nil { return "the parser took bytes after refusing" }
            return nil
        }
        for request in requests {
            if request.body.count > RTSPResponseParser.maximumBodyBytes { return "a body of \(request.body.count) bytes" }
            if request.headers.count > RTSPResponseParser.maximumHeaders { return "\(request.headers.count) header fields" }
            let answer = RTSPRequestParser.okResponse(cseq: request.headers.first { $0.0 == "cseq" }?.1)
            if answer.count > 80 || answer.filter({ $0 == 10 }).count != 4 { return "an answer of \(answer.count) bytes" }
        }
        return nil
    }

    static let rtspResponse = FuzzHarness("rtsp-response", "RTSP answers of an AirPlay receiver, in two reads, and their digest challenges", maximumLength: 96 * 1024) { bytes in
        var parser = RTSPResponseParser()
        let split = bytes.isEmpty ? 0 : min(Int(bytes[0]) * 64, bytes.count)
        var responses: [RTSPResponse] = []
        do {
            responses += try parser.consume(bytes[..<split])
            responses += try parser.consume(bytes[split...])
        } catch {
            // A refused answer leaves the parser refusing.
            if (try? parser.consume([13, 10])) != nil { return "the parser took bytes after refusing" }
            return nil
        }
        for response in responses {
            if response.body.count > RTSPResponseParser.maximumBodyBytes { return "a body of \(response.body.count) bytes" }
            if response.headers.count > RTSPResponseParser.maximumHeaders { return "\(response.headers.count) header fields" }
            if !(100...599).contains(response.status) { return "status \(response.status)" }
            // RECORD's Audio-Latency, as the stream reads it: bounded, and the sync arithmetic never traps.
            let latency = RAOPLatency(total: 11_025, receiverHeader: response[header: "Audio-Latency"])
            if latency.receiver > 441_000 { return "a receiver latency of \(latency.receiver) frames" }
            _ = latency.playingTimestamp(position: UInt32(truncatingIfNeeded: bytes.count))
            if let transport = response[header: "Transport"], let ports = RAOPTransportPorts(transport: transport),
                ![ports.server, ports.control].allSatisfy({ (1...65_535).contains($0) })
            {
                return "ports out of range: \(ports)"
            }
            if let header = response[header: "WWW-Authenticate"], let challenge = RTSPDigestChallenge(header: header) {
                if challenge.nonce.isEmpty { return "a challenge without a nonce" }
                let answer = challenge.authorization(username: "iTunes", password: "p", method: "OPTIONS", uri: "*")
                if answer.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) { return "a line break in the answer to \(header)" }
            }
        }
        return nil
    }

    /// An AirPlay 2 receiver's answers to our two SETUPs (binary property lists, decoded by
    /// FoundationEssentials): read as each answer, never a trap; the ports taken are UDP ports.
    static let airPlay2Setup = FuzzHarness("airplay2-setup", "AirPlay 2 SETUP answers (binary property lists)", maximumLength: AirPlay2Setup.maximumBody + 16) { bytes in
        if let reply = try? AirPlay2Setup.decode(AirPlay2Setup.StreamsReply.self, from: bytes) {
            for stream in reply.streams where stream.dataPort.map({ $0 > 65_535 }) == true { return "a data port out of range" }
        }
        _ = try? AirPlay2Setup.decode(AirPlay2Setup.SessionReply.self, from: bytes)
        if bytes.count > AirPlay2Setup.maximumBody, (try? AirPlay2Setup.decode(AirPlay2Setup.SessionReply.self, from: bytes)) != nil {
            return "a body of \(bytes.count) bytes was decoded"
        }
        return nil
    }

    /// Datagrams on our control and timing ports.
    static let raopControl = FuzzHarness("raop-control", "timing and resend requests on the RAOP UDP ports", maximumLength: 2048) { bytes in
        if let request = TimingRequest(bytes) {
            let reply = RAOPPacket.timingReply(to: request, received: NTPTimestamp(seconds: 1, fraction: 2), transmitted: NTPTimestamp(seconds: 3, fraction: 4))
            if reply.count != 32 { return "a timing reply of \(reply.count) bytes" }
            if Array(reply[8..<16]) != Array(bytes[24..<32]) { return "the reply does not echo the request's transmit time" }
        }
        if let resend = ResendRequest(bytes), bytes.count < 8 { return "a resend request from \(bytes.count) bytes: \(resend)" }
        return nil
    }
}
