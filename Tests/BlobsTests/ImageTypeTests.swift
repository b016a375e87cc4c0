import Foundation
import Testing

@testable import Blobs

@Suite struct ImageTypeTests {
    @Test func recognizesEachFormatByItsFirstBytes() {
        #expect(ImageType.sniff([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]) == .jpeg)
        #expect(ImageType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D]) == .png)
        #expect(ImageType.sniff(Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WEBPVP8 ".utf8)) == .webp)
    }

    @Test func refusesLookalikesAndShortHeads() {
        #expect(ImageType.sniff([0xFF, 0xD8]) == nil)  // too short for JPEG's three bytes
        #expect(ImageType.sniff(Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WAVE".utf8)) == nil)  // a WAV file
        #expect(ImageType.sniff(Array("GIF89a".utf8)) == nil)
        #expect(ImageType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x00]) == nil)
        #expect(ImageType.sniff([]) == nil)
    }

    @Test func readsContentTypeHeaders() {
        #expect(ImageType(contentType: "image/JPEG; charset=binary") == .jpeg)
        #expect(ImageType(contentType: "image/webp") == .webp)
        #expect(ImageType(contentType: "image/gif") == nil)
        #expect(ImageType(contentType: "application/octet-stream") == nil)
    }
}
