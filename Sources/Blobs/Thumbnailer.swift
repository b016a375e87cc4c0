import Foundation
import Support

/// Small JPEG previews with libvips (Debian's `libvips-tools`): `vipsthumbnail` shrinks
/// within a box, keeps the aspect ratio, and decodes only what it needs of large JPEGs.
public enum Thumbnailer {
    public static let maxSide = 128

    public enum Failure: Error, Sendable { case failed(String) }

    /// A JPEG of at most `maxSide` px on its longest side, from image bytes.
    public static func jpeg(from image: [UInt8], workFolder: String,
                            tool: String = ProcessInfo.processInfo.environment["TIDEWAY_VIPSTHUMBNAIL"] ?? "/usr/bin/vipsthumbnail"
    ) throws -> [UInt8] {
        try FileManager.default.createDirectory(atPath: workFolder, withIntermediateDirectories: true)
        let stem = workFolder + "/thumb-" + Crypto.hex(Crypto.randomBytes(8))
        let input = stem + ".in", output = stem + ".jpg"
        defer {
            unlink(input)
            unlink(output)
        }
        guard FileManager.default.createFile(atPath: input, contents: Data(image)) else {
            throw Failure.failed("cannot write \(input)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = [input, "--size", "\(maxSide)x\(maxSide)", "-o", output + "[Q=80,strip]"]
        // No run-time generated SIMD code (liborc): the jobs unit forbids writable executable
        // memory (MemoryDenyWriteExecute), and a thumbnail does not need it.
        process.environment = ProcessInfo.processInfo.environment.merging(["VIPS_NOVECTOR": "1"]) { _, new in new }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let data = FileManager.default.contents(atPath: output) else {
            throw Failure.failed("vipsthumbnail: " + String(decoding: message, as: UTF8.self).prefix(300))
        }
        return Array(data)
    }
}
