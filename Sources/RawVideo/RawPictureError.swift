/// Why a producer's raw picture was not converted (``RawPictureLayout``): the picture is
/// dropped and counted, the stream goes on.
public enum RawPictureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A plane the pixel format needs is not in the buffer.
    case missingPlane(Int)
    /// A plane's stride is shorter than one row of it.
    case badStride(index: Int, stride: Int, rowBytes: Int)
    /// A plane holds fewer bytes than its rows need.
    case planeTooShort(index: Int, needed: Int, got: Int)
    /// The picture is smaller than the route's format.
    case sizeMismatch(expected: String, got: String)

    public var description: String {
        switch self {
        case .missingPlane(let index): "the picture has no plane \(index)"
        case .badStride(let index, let stride, let rowBytes): "plane \(index): a stride of \(stride) bytes for rows of \(rowBytes)"
        case .planeTooShort(let index, let needed, let got): "plane \(index): \(got) bytes, its rows need \(needed)"
        case .sizeMismatch(let expected, let got): "a picture of \(got) for a route of \(expected)"
        }
    }
}
