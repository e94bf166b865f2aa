import Coordination
import Foundation
import MediaRouteFuzzing
import Testing

/// The fuzz harnesses in the ordinary suite: every checked-in seed and every earlier
/// finding must pass, and a short deterministic mutation run of each must too.
@Suite struct FuzzCorpusTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ kind: String, _ harness: String) throws -> [(String, [UInt8])] {
        let folder = fuzzFolder.appendingPathComponent(kind).appendingPathComponent(harness)
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map { name in
            (name, Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
    }

    @Test func harnessNamesAreUnique() {
        let names = FuzzHarnesses.all.map(\.name)
        #expect(Set(names).count == names.count)
    }

    @Test(arguments: FuzzHarnesses.all.map(\.name))
    func everySeedPasses(_ name: String) throws {
        let harness = try #require(FuzzHarnesses.named(name))
        let seeds = try Self.inputs("Corpus", name)
        #expect(!seeds.isEmpty, "no seed corpus in Fuzz/Corpus/\(name)")
        for (file, bytes) in seeds {
            #expect(harness.run(bytes) == nil, "Fuzz/Corpus/\(name)/\(file)")
        }
    }

    /// Inputs that once crashed, hung or broke a property (Docs/reliability.md lists them).
    @Test(arguments: FuzzHarnesses.all.map(\.name))
    func everyEarlierFindingPasses(_ name: String) throws {
        let harness = try #require(FuzzHarnesses.named(name))
        for (file, bytes) in try Self.inputs("Regressions", name) {
            #expect(harness.run(bytes) == nil, "Fuzz/Regressions/\(name)/\(file)")
        }
    }

    /// A few thousand byte flips, insertions and cuts of the seeds, the same every run:
    /// not a fuzzer, but it keeps an obvious trap from reaching main between fuzz runs.
    @Test(arguments: FuzzHarnesses.all.map(\.name))
    func mutatedSeedsPass(_ name: String) throws {
        let harness = try #require(FuzzHarnesses.named(name))
        let seeds = try Self.inputs("Corpus", name).map(\.1)
        var random = SplitMix64(seed: UInt64(name.utf8.reduce(0) { $0 &* 31 &+ UInt64($1) }))
        for round in 0..<2_000 {
            var bytes = seeds.isEmpty ? [] : seeds[round % seeds.count]
            for _ in 0...(random.next() % 4) {
                let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
                switch random.next() % 5 {
                case 0 where !bytes.isEmpty: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                case 2 where !bytes.isEmpty: bytes.removeSubrange(position...)
                case 3 where !bytes.isEmpty: bytes[position] = [0x00, 0xFF, 0x7F, 0x80][Int(random.next() % 4)]
                default: bytes.insert(contentsOf: repeatElement(UInt8(truncatingIfNeeded: random.next()), count: Int(random.next() % 64)), at: position)
                }
            }
            if let broken = harness.run(bytes) {
                Issue.record("\(name), round \(round): \(broken); input \(bytes.prefix(64).map { String($0, radix: 16) })")
                return
            }
        }
    }
}
