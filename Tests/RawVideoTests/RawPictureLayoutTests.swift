import RawVideo
import RoutingModel
import Testing

/// A producer's raw pictures (PipeWire buffers) to the route's 4:2:0 pictures, on bytes.
struct RawPictureLayoutTests {
    /// `rows` rows of `count` bytes, row `r` all `value(r)`.
    func rows(_ rows: Int, of count: Int, _ value: (Int) -> Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for row in 0..<rows { bytes += [UInt8](repeating: UInt8(value(row)), count: count) }
        return bytes
    }

    /// `times` copies of `pattern`.
    func repeated(_ pattern: [UInt8], _ times: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<times { bytes += pattern }
        return bytes
    }

    /// Converts `data` cut into planes at `cuts` with `strides`.
    func convert(_ layout: RawPictureLayout, _ data: [UInt8], cuts: [Int] = [], strides: [Int]) throws(RawPictureError) -> ([UInt8], VideoFrameFormat) {
        let format = try! layout.outputFormat(frameRateNumerator: 25, frameRateDenominator: 1)
        var output: [UInt8] = []
        let bounds = [0] + cuts + [data.count]
        let result = data.withUnsafeBytes { raw -> Result<Void, RawPictureError> in
            let planes = zip(bounds, bounds.dropFirst()).enumerated().map { index, range in
                RawPictureLayout.Plane(bytes: UnsafeRawBufferPointer(rebasing: raw[range.0..<range.1]), stride: strides[index])
            }
            do throws(RawPictureError) {
                try layout.convert(planes, into: &output, as: format)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        return (output, format)
    }

    @Test func paddedI420PlanesAreCopiedRowByRowWithoutThePadding() throws {
        // 16×16 with every row padded to 24 (Y) and 12 (U, V) bytes; each byte says its place.
        let layout = RawPictureLayout(pixelFormat: .i420, width: 16, height: 16)
        let y = (0..<16).flatMap { row in (0..<24).map { UInt8(truncatingIfNeeded: $0 < 16 ? row * 16 + $0 : 0xEE) } }
        let u = (0..<8).flatMap { row in (0..<12).map { UInt8($0 < 8 ? 10 + row : 0xEE) } }
        let v = (0..<8).flatMap { row in (0..<12).map { UInt8($0 < 8 ? 100 + row : 0xEE) } }
        let (output, format) = try convert(layout, y + u + v, cuts: [y.count, y.count + u.count], strides: [24, 12, 12])
        #expect(format.encoding == .i420 && format.width == 16 && format.height == 16)
        #expect(Array(output[0..<256]) == (0..<256).map { UInt8($0) })
        let u8 = rows(8, of: 8) { 10 + $0 }
        let v8 = rows(8, of: 8) { 100 + $0 }
        #expect(Array(output[256..<320]) == u8)
        #expect(Array(output[320..<384]) == v8)
    }

    @Test func i420InOneBlockFindsItsChromaStrideFromTheBlocksSize() throws {
        // 18 wide: GStreamer pads Y rows to 20 and chroma rows to 12 (9 rounded up to 4); halving Y's stride would say 10.
        let layout = RawPictureLayout(pixelFormat: .i420, width: 18, height: 16)
        let y = [UInt8](repeating: 50, count: 20 * 16)
        let u = (0..<8).flatMap { _ in [UInt8](repeating: 60, count: 9) + [0xEE, 0xEE, 0xEE] }
        let v = (0..<8).flatMap { _ in [UInt8](repeating: 70, count: 9) + [0xEE, 0xEE, 0xEE] }
        let (output, format) = try convert(layout, y + u + v, strides: [20])
        #expect(format.width == 18)
        #expect(output == [UInt8](repeating: 50, count: 18 * 16) + [UInt8](repeating: 60, count: 72) + [UInt8](repeating: 70, count: 72))
    }

    @Test func nv12StaysNV12AndOddSizesLoseTheirLastRowAndColumn() throws {
        let layout = RawPictureLayout(pixelFormat: .nv12, width: 17, height: 17)
        let y = (0..<17).flatMap { row in (0..<17).map { UInt8(row == 16 || $0 == 16 ? 0xEE : 1) } }
        let uv = (0..<9).flatMap { row in (0..<18).map { UInt8(row == 8 || $0 >= 16 ? 0xEE : ($0 % 2 == 0 ? 90 : 200)) } }
        let (output, format) = try convert(layout, y + uv, cuts: [y.count], strides: [17, 18])
        #expect(format.encoding == .nv12 && format.width == 16 && format.height == 16)
        #expect(output.count == format.frameBytes)
        #expect(Array(output[0..<256]).allSatisfy { $0 == 1 })
        #expect(Array(output[256...]) == repeated([90, 200], 64))
    }

    @Test func packedYUYVBecomesPlanarWithChromaFromBothRows() throws {
        let layout = RawPictureLayout(pixelFormat: .yuy2, width: 16, height: 16)
        // Even rows U 100 V 200, odd rows U 110 V 210: the average is taken.
        var data: [UInt8] = []
        for row in 0..<16 {
            let even = row % 2 == 0
            data += repeated([40, even ? 100 : 110, 41, even ? 200 : 210], 8)
        }
        let (output, _) = try convert(layout, data, strides: [32])
        #expect(Array(output[0..<256]) == repeated([40, 41], 128))
        #expect(Array(output[256..<320]).allSatisfy { $0 == 105 })
        #expect(Array(output[320..<384]).allSatisfy { $0 == 205 })
    }

    /// BT.601 limited range: white 235/128/128, black 16/128/128, red 81/90/240, green 145/54/34, blue 41/240/110.
    @Test(arguments: RawPictureLayout.PixelFormat.allCases.filter { ![.i420, .nv12, .yuy2].contains($0) })
    func rgbPixelsAreConvertedToBT601(_ pixelFormat: RawPictureLayout.PixelFormat) throws {
        let colours: [(rgb: (Int, Int, Int), yuv: (Int, Int, Int))] = [
            ((255, 255, 255), (235, 128, 128)), ((0, 0, 0), (16, 128, 128)), ((255, 0, 0), (81, 90, 240)),
            ((0, 255, 0), (145, 54, 34)), ((0, 0, 255), (41, 240, 110)),
        ]
        for colour in colours {
            let (r, g, b) = colour.rgb
            let pixel: [UInt8] = switch pixelFormat {
            case .bgrx: [b, g, r, 0xFF].map(UInt8.init)
            case .rgbx: [r, g, b, 0xFF].map(UInt8.init)
            case .xrgb: [0xFF, r, g, b].map(UInt8.init)
            default: [0xFF, b, g, r].map(UInt8.init)
            }
            let layout = RawPictureLayout(pixelFormat: pixelFormat, width: 16, height: 16)
            let data = repeated(repeated(pixel, 16) + [0xEE, 0xEE, 0xEE, 0xEE], 16)
            let (output, _) = try convert(layout, data, strides: [68])
            let (y, u, v) = colour.yuv
            let (luma, lastLuma, cb, cr) = (Int(output[0]), Int(output[255]), Int(output[256]), Int(output[320]))
            #expect(abs(luma - y) <= 1 && abs(lastLuma - y) <= 1, "\(pixelFormat) \(r),\(g),\(b): Y \(luma)")
            #expect(abs(cb - u) <= 1 && abs(cr - v) <= 1, "\(pixelFormat) \(r),\(g),\(b): U \(cb) V \(cr)")
        }
    }

    @Test func planesTooShortOrStridesTooSmallAreRefusedNotRead() {
        let layout = RawPictureLayout(pixelFormat: .bgrx, width: 16, height: 16)
        #expect(throws: RawPictureError.planeTooShort(index: 0, needed: 64 * 15 + 64, got: 1000)) {
            _ = try convert(layout, [UInt8](repeating: 0, count: 1000), strides: [64])
        }
        #expect(throws: RawPictureError.badStride(index: 0, stride: 32, rowBytes: 64)) {
            _ = try convert(layout, [UInt8](repeating: 0, count: 4096), strides: [32])
        }
        // A stride so large its arithmetic would overflow: refused, no trap.
        #expect(throws: RawPictureError.self) { _ = try convert(layout, [UInt8](repeating: 0, count: 4096), strides: [Int.max / 2]) }
        let i420 = RawPictureLayout(pixelFormat: .i420, width: 16, height: 16)
        #expect(throws: RawPictureError.missingPlane(2)) { _ = try convert(i420, [UInt8](repeating: 0, count: 384), cuts: [256], strides: [16, 8]) }
        #expect(throws: RawPictureError.self) { _ = try convert(i420, [UInt8](repeating: 0, count: 300), strides: [16]) }
    }

    @Test func sizesTheRouteDoesNotTakeAreRefusedWithTheReason() throws {
        #expect(throws: MediaDeviceError.self) { try RawPictureLayout(pixelFormat: .i420, width: 15, height: 480).outputFormat(frameRateNumerator: 30, frameRateDenominator: 1) }
        #expect(throws: MediaDeviceError.self) { try RawPictureLayout(pixelFormat: .bgrx, width: 5120, height: 1440).outputFormat(frameRateNumerator: 30, frameRateDenominator: 1) }
        #expect(try RawPictureLayout(pixelFormat: .bgrx, width: 1921, height: 1081).outputFormat(frameRateNumerator: 30, frameRateDenominator: 1).width == 1920)
    }
}
