

/// One parser of bytes MediaRoute takes from strangers, as a fuzzer drives it.
///
/// `check` feeds one input to the parser the way the code that receives such
/// bytes does, then checks what must hold of any answer (a decoded message
/// re-encodes, a length stays within its limit). It returns the broken
/// property, or nil. Typed errors are the expected answer to bad input; a trap
/// (overflow, index out of range) or a hang is the finding.
///
/// The same harnesses run in three places: libFuzzer (`make fuzz`, the
/// `mediaroute-fuzz` binary), the test suite (every checked-in seed and every
/// earlier finding, `Fuzz/Corpus` and `Fuzz/Regressions`), and CI (a short run
/// of each).
package struct FuzzHarness: Sendable {
    /// The harness's name: its corpus folder and its `fuzz-<name>` command.
    package let name: String
    /// What it feeds, for `mediaroute-fuzz --list`.
    package let summary: String
    /// Inputs longer than this are cut: the receiving code reads no more.
    package let maximumLength: Int
    package let check: @Sendable ([UInt8]) -> String?

    package init(_ name: String, _ summary: String, maximumLength: Int = 64 * 1024, check: @escaping @Sendable ([UInt8]) -> String?) {
        self.name = name
        self.summary = summary
        self.maximumLength = maximumLength
        self.check = check
    }

    /// Runs one input (cut to ``maximumLength``).
    package func run(_ bytes: [UInt8]) -> String? {
        check(bytes.count > maximumLength ? Array(bytes.prefix(maximumLength)) : bytes)
    }
}
