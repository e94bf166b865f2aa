// The libFuzzer entry points for every harness in MediaRouteFuzzing.
//
// One binary serves all of them: the harness is the one named by
// `MEDIAROUTE_FUZZ_HARNESS`, or by the command's name when it is called through
// a `fuzz-<harness>` link (scripts/fuzz.sh makes those).
#if canImport(Glibc)
import Glibc
#endif
import MediaRouteFuzzing

/// Set once in `LLVMFuzzerInitialize`, before libFuzzer runs any input, and only
/// read after that; libFuzzer calls the entry points from one thread. So the
/// unsynchronised global is never written while it is read.
nonisolated(unsafe) private var selected: FuzzHarness?

/// libFuzzer's driver, which `main` hands the command line to.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// SwiftPM links an executable's `main` to `<module>_main`; libFuzzer's own `main`
/// would only call the driver, so this does.
@_cdecl("mediaroute_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in testOneInput(data, size) }
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    var name = getenv("MEDIAROUTE_FUZZ_HARNESS").map { String(cString: $0) }
    if name == nil, let command = argv.pointee?.pointee.map({ String(cString: $0) }) {
        let base = command.split(separator: "/").last.map(String.init) ?? command
        if base.hasPrefix("fuzz-") { name = String(base.dropFirst(5)) }
    }
    guard let name, let harness = FuzzHarnesses.named(name) else {
        let known = FuzzHarnesses.all.map { "  \($0.name): \($0.summary)" }.joined(separator: "\n")
        report("mediaroute-fuzz: name a harness with MEDIAROUTE_FUZZ_HARNESS or a fuzz-<harness> link:\n\(known)\n")
        exit(2)
    }
    selected = harness
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let harness = selected else { return 0 }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let broken = harness.run(bytes) {
        report("mediaroute-fuzz: \(harness.name): \(broken)\n")
        abort()  // libFuzzer saves the input as a crash
    }
    return 0
}

/// Standard error without the C `stderr` global (not concurrency-safe to name in Swift 6).
private func report(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}
