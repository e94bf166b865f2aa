public import RoutingModel

/// A raw picture as a producer lays it out — a PipeWire screen-cast stream, a camera, a
/// GStreamer pipeline — and its conversion to the 4:2:0 picture a route takes
/// (``VideoFrameFormat``): I420 and NV12 are copied plane by plane, packed YUYV and 32-bit
/// RGB are converted to I420 (BT.601, limited range, chroma averaged over 2×2 pixels).
///
/// Producers pad rows (each plane has its own stride) and may give odd sizes (a window cast):
/// the picture taken is the even part of it, its last odd row or column left out. Every
/// length comes from the producer, so each is checked before a byte is read: a plane too
/// short for its size and stride is refused, never read past.
public struct RawPictureLayout: Sendable, Hashable {
    /// How the producer's pixels are laid out, in memory order (PipeWire's names).
    public enum PixelFormat: String, Sendable, Hashable, CaseIterable {
        /// Planar Y, U, V (three planes, or one block holding them one after another).
        case i420
        /// Y, then U and V interleaved.
        case nv12
        /// Packed Y0 U Y1 V (many USB cameras).
        case yuy2
        /// 32-bit pixels, bytes B, G, R, then one unused or alpha (most compositors' screen casts).
        case bgrx
        /// Bytes R, G, B, then one unused or alpha.
        case rgbx
        /// One unused or alpha byte, then R, G, B.
        case xrgb
        /// One unused or alpha byte, then B, G, R.
        case xbgr

        /// Where red, green and blue sit in a 32-bit pixel; nil for YUV.
        var rgbOffsets: (red: Int, green: Int, blue: Int)? {
            switch self {
            case .bgrx: (2, 1, 0)
            case .rgbx: (0, 1, 2)
            case .xrgb: (1, 2, 3)
            case .xbgr: (3, 2, 1)
            case .i420, .nv12, .yuy2: nil
            }
        }
    }

    public var pixelFormat: PixelFormat
    /// The producer's size in pixels (may be odd).
    public var width: Int
    public var height: Int

    public init(pixelFormat: PixelFormat, width: Int, height: Int) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
    }

    /// The route's format for these pictures at `frameRate`: NV12 stays NV12, the rest become
    /// I420; the size is the even part of the producer's. Throws when that is not taken.
    public func outputFormat(frameRateNumerator: Int, frameRateDenominator: Int) throws(MediaDeviceError) -> VideoFrameFormat {
        try VideoFrameFormat(
            encoding: pixelFormat == .nv12 ? .nv12 : .i420, width: width & ~1, height: height & ~1,
            frameRateNumerator: frameRateNumerator, frameRateDenominator: frameRateDenominator)
    }

    /// The bytes of one picture in one block, and its first plane's stride, with rows padded to
    /// 4 bytes as GStreamer and most producers pad them: what a PipeWire buffer must hold.
    public var packedSize: (bytes: Int, stride: Int) {
        func padded(_ value: Int) -> Int { (value + 3) & ~3 }
        let chromaRows = (height + 1) / 2
        switch pixelFormat {
        case .i420:
            let stride = padded(width)
            return (stride * ((height + 1) & ~1) + 2 * padded((width + 1) / 2) * chromaRows, stride)
        case .nv12:
            let stride = padded(width)
            return (stride * height + stride * chromaRows, stride)
        case .yuy2:
            return (padded(2 * width) * height, padded(2 * width))
        case .bgrx, .rgbx, .xrgb, .xbgr:
            return (4 * width * height, 4 * width)
        }
    }

    /// One plane of a producer's picture: its bytes and the bytes from one row to the next.
    public struct Plane {
        public var bytes: UnsafeRawBufferPointer
        public var stride: Int
        public init(bytes: UnsafeRawBufferPointer, stride: Int) {
            self.bytes = bytes
            self.stride = stride
        }
    }

    /// Writes the picture in `planes` into `output` as `format` (from ``outputFormat(frameRateNumerator:frameRateDenominator:)``).
    ///
    /// I420 may come as three planes or as one block (the chroma planes after Y; their stride
    /// is found from the block's size: GStreamer rounds it up to 4 bytes, others halve Y's);
    /// NV12 as two planes or one block.
    public func convert(_ planes: [Plane], into output: inout [UInt8], as format: VideoFrameFormat) throws(RawPictureError) {
        let width = format.width, height = format.height
        guard width <= self.width, height <= self.height, width > 0, height > 0 else {
            throw .sizeMismatch(expected: "\(width)x\(height)", got: "\(self.width)x\(self.height)")
        }
        guard let first = planes.first else { throw .missingPlane(0) }
        if output.count != format.frameBytes { output = [UInt8](repeating: 0, count: format.frameBytes) }
        let lumaBytes = width * height
        switch pixelFormat {
        case .i420, .nv12:
            let chromaRows = (self.height + 1) / 2
            let lumaStride = first.stride
            var chroma: [Plane] = []
            if planes.count > 1 {
                chroma = Array(planes.dropFirst())
            } else {
                // One block: Y (stride × height), then the chroma planes.
                let (lumaSize, overflow) = lumaStride.multipliedReportingOverflow(by: self.height)
                guard !overflow, lumaSize <= first.bytes.count else { throw .planeTooShort(index: 0, needed: lumaSize, got: first.bytes.count) }
                let rest = UnsafeRawBufferPointer(rebasing: first.bytes[lumaSize...])
                if pixelFormat == .nv12 {
                    chroma = [Plane(bytes: rest, stride: lumaStride)]
                } else {
                    let gstreamer = ((self.width + 1) / 2 + 3) & ~3
                    let chromaStride = rest.count == 2 * gstreamer * chromaRows ? gstreamer : lumaStride / 2
                    let (chromaSize, chromaOverflow) = chromaStride.multipliedReportingOverflow(by: chromaRows)
                    guard !chromaOverflow, chromaSize <= rest.count else { throw .planeTooShort(index: 1, needed: chromaSize, got: rest.count) }
                    chroma = [
                        Plane(bytes: UnsafeRawBufferPointer(rebasing: rest[..<chromaSize]), stride: chromaStride),
                        Plane(bytes: UnsafeRawBufferPointer(rebasing: rest[chromaSize...]), stride: chromaStride),
                    ]
                }
            }
            try Self.check(first, rowBytes: self.width, rows: self.height, index: 0)
            output.withUnsafeMutableBytes { out in
                Self.copyRows(from: first, rowBytes: width, rows: height, into: out.baseAddress!, stride: width)
            }
            if pixelFormat == .nv12 {
                guard let uv = chroma.first else { throw .missingPlane(1) }
                try Self.check(uv, rowBytes: (self.width + 1) & ~1, rows: chromaRows, index: 1)
                output.withUnsafeMutableBytes { out in
                    Self.copyRows(from: uv, rowBytes: width, rows: height / 2, into: out.baseAddress! + lumaBytes, stride: width)
                }
            } else {
                guard chroma.count >= 2 else { throw .missingPlane(chroma.count + 1) }
                for (index, plane) in chroma.prefix(2).enumerated() {
                    try Self.check(plane, rowBytes: (self.width + 1) / 2, rows: chromaRows, index: index + 1)
                    output.withUnsafeMutableBytes { out in
                        Self.copyRows(
                            from: plane, rowBytes: width / 2, rows: height / 2, into: out.baseAddress! + lumaBytes + index * lumaBytes / 4, stride: width / 2)
                    }
                }
            }
        case .yuy2:
            try Self.check(first, rowBytes: 2 * self.width, rows: self.height, index: 0)
            output.withUnsafeMutableBufferPointer { out in
                let source = first.bytes.bindMemory(to: UInt8.self)
                let pitch = first.stride
                let u = lumaBytes, v = lumaBytes + lumaBytes / 4
                for row in stride(from: 0, to: height, by: 2) {
                    let top = row &* pitch, bottom = (row &+ 1) &* pitch
                    for column in stride(from: 0, to: width, by: 2) {
                        let t = top &+ column &* 2, b = bottom &+ column &* 2
                        out[row &* width &+ column] = source[t]
                        out[row &* width &+ column &+ 1] = source[t &+ 2]
                        out[(row &+ 1) &* width &+ column] = source[b]
                        out[(row &+ 1) &* width &+ column &+ 1] = source[b &+ 2]
                        let chroma = (row / 2) &* (width / 2) &+ column / 2
                        out[u &+ chroma] = UInt8((Int(source[t &+ 1]) &+ Int(source[b &+ 1]) &+ 1) >> 1)
                        out[v &+ chroma] = UInt8((Int(source[t &+ 3]) &+ Int(source[b &+ 3]) &+ 1) >> 1)
                    }
                }
            }
        case .bgrx, .rgbx, .xrgb, .xbgr:
            let (r, g, b) = pixelFormat.rgbOffsets!
            try Self.check(first, rowBytes: 4 * self.width, rows: self.height, index: 0)
            output.withUnsafeMutableBufferPointer { out in
                let source = first.bytes.bindMemory(to: UInt8.self)
                let pitch = first.stride
                let u = lumaBytes, v = lumaBytes + lumaBytes / 4
                @inline(__always) func luma(_ red: Int, _ green: Int, _ blue: Int) -> UInt8 {
                    UInt8(truncatingIfNeeded: ((66 &* red &+ 129 &* green &+ 25 &* blue &+ 128) >> 8) &+ 16)
                }
                for row in stride(from: 0, to: height, by: 2) {
                    for column in stride(from: 0, to: width, by: 2) {
                        var redSum = 0, greenSum = 0, blueSum = 0
                        for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                            let pixel = (row &+ dy) &* pitch &+ (column &+ dx) &* 4
                            let red = Int(source[pixel &+ r]), green = Int(source[pixel &+ g]), blue = Int(source[pixel &+ b])
                            out[(row &+ dy) &* width &+ column &+ dx] = luma(red, green, blue)
                            redSum &+= red
                            greenSum &+= green
                            blueSum &+= blue
                        }
                        let chroma = (row / 2) &* (width / 2) &+ column / 2
                        // The 2×2 sums are 4× the averages: the >> 10 takes the 4 out with the 256.
                        out[u &+ chroma] = UInt8(truncatingIfNeeded: ((-38 &* redSum &- 74 &* greenSum &+ 112 &* blueSum &+ 512) >> 10) &+ 128)
                        out[v &+ chroma] = UInt8(truncatingIfNeeded: ((112 &* redSum &- 94 &* greenSum &- 18 &* blueSum &+ 512) >> 10) &+ 128)
                    }
                }
            }
        }
    }

    /// Refuses a plane whose rows (`rows` of `rowBytes`, `stride` apart) do not fit in its bytes.
    private static func check(_ plane: Plane, rowBytes: Int, rows: Int, index: Int) throws(RawPictureError) {
        guard plane.stride >= rowBytes, rows > 0 else { throw .badStride(index: index, stride: plane.stride, rowBytes: rowBytes) }
        let (before, overflow) = plane.stride.multipliedReportingOverflow(by: rows - 1)
        let (needed, overflow2) = before.addingReportingOverflow(rowBytes)
        guard !overflow, !overflow2, needed <= plane.bytes.count else {
            throw .planeTooShort(index: index, needed: overflow || overflow2 ? Int.max : needed, got: plane.bytes.count)
        }
    }

    private static func copyRows(from plane: Plane, rowBytes: Int, rows: Int, into destination: UnsafeMutableRawPointer, stride: Int) {
        guard let base = plane.bytes.baseAddress else { return }
        for row in 0..<rows {
            (destination + row * stride).copyMemory(from: base + row * plane.stride, byteCount: rowBytes)
        }
    }
}
