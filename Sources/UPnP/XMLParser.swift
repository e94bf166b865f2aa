import CExpat
#if canImport(Glibc)
import Glibc
#endif

/// Parses untrusted XML with Expat: no DOCTYPE at all (so no DTD, no entity of
/// the document's own, nothing ever fetched), only the five predefined entities
/// and character references, bounded size, depth and element count.
///
/// Namespaces are resolved here rather than by Expat: devices in the field send
/// prefixes they never declare (`dlna:X_DLNADOC`), which Expat's namespace mode
/// refuses as a whole document; here such an element keeps its local name and
/// has no namespace, as it had with libxml2.
public struct XMLParser: Sendable {
    public var maximumBytes: Int
    public var maximumDepth: Int
    public var maximumElements: Int

    public init(maximumBytes: Int = 256 * 1024, maximumDepth: Int = 32, maximumElements: Int = 10_000) {
        self.maximumBytes = maximumBytes
        self.maximumDepth = maximumDepth
        self.maximumElements = maximumElements
    }

    /// The root element of `bytes`.
    public func parse(_ bytes: [UInt8]) throws(XMLError) -> XMLElement {
        guard bytes.count <= maximumBytes, bytes.count <= Int(Int32.max) else { throw XMLError(.tooLarge, "\(bytes.count) bytes (limit \(maximumBytes))") }
        guard !bytes.isEmpty else { throw XMLError(.malformed, "empty document") }
        if Self.containsDoctype(bytes) { throw XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted") }
        guard let parser = XML_ParserCreate(nil) else { throw XMLError(.malformed, "no parser (out of memory)") }
        defer { XML_ParserFree(parser) }
        let builder = XMLTreeBuilder(parser: parser, maximumDepth: maximumDepth, maximumElements: maximumElements)
        let status = withExtendedLifetime(builder) {
            XML_SetUserData(parser, Unmanaged.passUnretained(builder).toOpaque())
            XML_SetElementHandler(parser, { context, name, attributes in
                guard let context, let name else { return }
                XMLTreeBuilder.from(context).start(name, attributes)
            }, { context, _ in
                guard let context else { return }
                XMLTreeBuilder.from(context).end()
            })
            XML_SetCharacterDataHandler(parser) { context, characters, length in
                guard let context, let characters, length > 0 else { return }
                XMLTreeBuilder.from(context).characters(characters, Int(length))
            }
            // The byte scan above catches a DOCTYPE in UTF-8; these catch one in any other encoding.
            XML_SetStartDoctypeDeclHandler(parser) { context, _, _, _, _ in
                guard let context else { return }
                XMLTreeBuilder.from(context).fail(XMLError(.doctypeForbidden, "a DOCTYPE declaration is not accepted"))
            }
            XML_SetExternalEntityRefHandler(parser) { _, _, _, _, _ in Int32(XML_STATUS_ERROR.rawValue) }
            XML_SetParamEntityParsing(parser, XML_PARAM_ENTITY_PARSING_NEVER)
            return bytes.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    XML_Parse(parser, $0, Int32(buffer.count), 1)
                }
            }
        }
        if let failure = builder.failure { throw failure }
        guard status == XML_STATUS_OK else {
            let code = XML_GetErrorCode(parser)
            let message = XML_ErrorString(code).map { String(cString: $0) } ?? "not well-formed"
            throw XMLError(.malformed, "\(message) at line \(XML_GetCurrentLineNumber(parser))")
        }
        guard let root = builder.root else { throw XMLError(.malformed, "no root element") }
        return root
    }

    /// Parses a string (UTF-8).
    public func parse(_ text: String) throws(XMLError) -> XMLElement { try parse(Array(text.utf8)) }

    static func containsDoctype(_ bytes: [UInt8]) -> Bool {
        let needle = Array("<!DOCTYPE".utf8)
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == 0x3C {
            if bytes[start..<start + needle.count].elementsEqual(needle, by: { upper($0) == $1 }) { return true }
        }
        return false
        func upper(_ byte: UInt8) -> UInt8 { (0x61...0x7A).contains(byte) ? byte - 0x20 : byte }
    }
}
