import Foundation
import MediaRouteTestSupport
import NowPlaying
import NowPlayingPush
import MediaRouteTesting

/// The push endpoint under wrk: sustained updates per second, latency, and
/// whether every accepted update reached Now Playing, in order.
extension Bench {
    static func push() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk") else {
            print("push: /usr/bin/wrk is not installed (apt-get install wrk)")
            return
        }
        print("| connections | requests/s | p50 ms | p99 ms | accepted | applied | in order |")
        print("|---|---|---|---|---|---|---|")
        for connections in [1, 16, 64] {
            try await pushRun(connections: connections, seconds: 10)
        }
    }

    static func pushRun(connections: Int, seconds: Int) async throws {
        let center = NowPlayingCenter()
        try await center.register(SpeakerExtension(topic: "bench"))
        let endpoint = try await PushEndpoint.bind(PushEndpoint.Configuration(port: 0), center: center)
        let server = Task { await endpoint.run() }
        defer {
            endpoint.close()
            server.cancel()
        }
        let startToken = await center.pushToStartToken(topic: "bench")!
        let started = try await center.handlePush(body: Array(SeedPayloads.start.utf8), bearerToken: startToken.hex, topic: nil)
        let token = started.updateToken!.hex

        // Count what Now Playing shows: every update's title is "thread-counter".
        let events = await center.events()
        let applied = Locked<[String]>([])
        let follower = Task {
            for await event in events {
                if case .sessionUpdated(let info, _) = event, let title = info.content?.title { applied.withLock { $0.append(title) } }
            }
        }
        let update = SeedPayloads.update.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\\\"Song Title\\\"", with: "\\\"%d-%d\\\"")
        let script = """
            local counter = 0
            local threads = 0
            function setup(thread) thread:set("tid", threads); threads = threads + 1 end
            request = function()
              counter = counter + 1
              local body = string.format("\(update)", tid, counter)
              return wrk.format("POST", "/nowplaying", {["Authorization"] = "Bearer \(token)", ["Content-Type"] = "application/json"}, body)
            end
            """
        let path = NSTemporaryDirectory() + "mediaroute-push-\(UUID().uuidString).lua"
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let threads = min(2, connections)
        let (_, output) = try await ChildProcess.runOffPool([
            "/usr/bin/wrk", "-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--latency", "-s", path,
            "http://127.0.0.1:\(endpoint.localPort)/nowplaying",
        ])
        // Let the last updates land.
        var last = -1
        while applied.value.count != last {
            last = applied.value.count
            try await Task.sleep(for: .milliseconds(200))
        }
        follower.cancel()

        func number(after label: String) -> Double? {
            guard let line = output.split(separator: "\n").first(where: { $0.contains(label) }) else { return nil }
            let fields = line.split(separator: " ").map(String.init)
            guard let index = fields.firstIndex(where: { $0.hasSuffix(label.split(separator: " ").last.map(String.init) ?? label) }) else { return nil }
            return fields.dropFirst(index + 1).first.flatMap { Double($0) }
        }
        func latency(_ percentile: String) -> Double? {
            guard let line = output.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix(percentile) }) else { return nil }
            let value = line.split(separator: " ").last.map(String.init) ?? ""
            if value.hasSuffix("us") { return Double(value.dropLast(2)).map { $0 / 1000 } }
            if value.hasSuffix("ms") { return Double(value.dropLast(2)) }
            if value.hasSuffix("s") { return Double(value.dropLast(1)).map { $0 * 1000 } }
            return nil
        }
        let total = output.split(separator: "\n").first { $0.contains("requests in") }
            .flatMap { Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? 0
        let failed = output.split(separator: "\n").first { $0.contains("Non-2xx") }
            .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        let rate = number(after: "Requests/sec:") ?? 0
        // In order: per wrk thread, counters only grow (exactly, with one connection per thread).
        var lastByThread: [String: Int] = [:]
        var ordered = true
        for title in applied.value {
            let parts = title.split(separator: "-")
            guard parts.count == 2, let counter = Int(parts[1]) else { continue }
            if connections == threads, let previous = lastByThread[String(parts[0])], counter <= previous { ordered = false }
            lastByThread[String(parts[0])] = counter
        }
        let accepted = total - failed
        let appliedCount = applied.value.count
        let orderCell = connections == threads ? (ordered ? "yes" : "**no**") : "n/a (\(connections / threads) connections per wrk thread)"
        print("| \(connections) | \(format(rate, 0)) | \(format(latency("50%") ?? .nan, 2)) | \(format(latency("99%") ?? .nan, 2)) | \(accepted) (non-2xx: \(failed)) | \(appliedCount) | \(orderCell) |")
        if appliedCount < accepted { print("LOST: \(accepted - appliedCount) accepted updates never reached Now Playing") }
    }
}
