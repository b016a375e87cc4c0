import Foundation
import TidewayModels

/// What an upload round did.
public struct UploadReport: Sendable, Codable {
    public var uploaded = 0
    public var bytes = 0
    public var refused: [String] = []
}

extension TidewayClient {
    /// Where photos wait for their upload (and downloads are cached): in the login's folder.
    var photoFolder: URL {
        get throws {
            guard let user else { throw TidewayError.signedOut }
            let folder = directory.appendingPathComponent("photos-\(user.id)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        }
    }

    /// Adds a photo: its bytes are kept in the store's folder, its document (with the thumbnail,
    /// not the picture) is queued like any change, and its upload waits in a queue of its own
    /// until the document is on the server.
    @discardableResult
    public func addPhoto(_ photo: Photo, bytes: Data, contentType: String = "image/jpeg", partition: String) throws -> QueuedChange? {
        var doc = photo
        doc.picture = nil
        let file = try photoFolder.appendingPathComponent(photo._id + ".upload")
        try bytes.write(to: file, options: .atomic)
        return try store.insertPhoto(JSONValue.from(doc), partition: partition, file: file.path, contentType: contentType,
                                     bytes: bytes.count)
    }

    /// Uploads every photo whose document the server has (`PUT /blobs/<id>`, idempotent): a
    /// killed app resumes by sending the photo again. A refusal (4xx) ends that upload and is
    /// reported; a network failure leaves it queued.
    public func uploadPhotos() throws -> UploadReport {
        if isOffline { throw TidewayError.offline }
        let store = try store
        var report = UploadReport()
        for upload in try store.readyUploads() {
            guard let bytes = FileManager.default.contents(atPath: upload.file) else {
                try store.finishUpload(upload.photoId)
                report.refused.append(upload.photoId)
                continue
            }
            let answer: HTTPResponse
            do {
                answer = try session.send("PUT", "/api/v1/blobs/" + upload.photoId, body: bytes, contentType: upload.contentType,
                                          timeout: 300)
            } catch {
                try store.failUpload(upload.photoId, error: "\(error)")
                throw error
            }
            if (200..<300).contains(answer.status) {
                afterUploadAnswered?(report.uploaded + 1)
                try store.finishUpload(upload.photoId)
                try? FileManager.default.removeItem(atPath: upload.file)
                report.uploaded += 1
                report.bytes += bytes.count
            } else if (400..<500).contains(answer.status) && answer.status != 408 && answer.status != 429 {
                try store.finishUpload(upload.photoId)
                try? FileManager.default.removeItem(atPath: upload.file)
                try store.notice(kind: "upload-refused", partition: upload.partition,
                                 detail: "photo \(upload.photoId): \(answer.error)")
                report.refused.append(upload.photoId)
            } else {
                try store.failUpload(upload.photoId, error: "\(answer.error)")
                throw answer.error
            }
        }
        return report
    }

    /// A photo's bytes, downloaded on demand and cached; a cached copy is revalidated with its ETag.
    public func photo(_ photoId: String) throws -> Data {
        let folder = try photoFolder
        let cached = folder.appendingPathComponent(photoId + ".jpg")
        let tag = folder.appendingPathComponent(photoId + ".etag")
        var headers: [String] = []
        if let etag = try? String(contentsOf: tag, encoding: .utf8), FileManager.default.fileExists(atPath: cached.path) {
            headers.append("If-None-Match: " + etag)
        }
        var etag: String?
        let answer = try session.send("GET", "/api/v1/blobs/" + photoId, headers: headers, timeout: 300, onHeaderLine: { line in
            if line.lowercased().hasPrefix("etag:") {
                etag = line.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)
            }
        })
        if answer.status == 304, let data = FileManager.default.contents(atPath: cached.path) { return data }
        guard answer.status == 200 else { throw answer.error }
        try answer.body.write(to: cached, options: .atomic)
        if let etag { try etag.write(to: tag, atomically: true, encoding: .utf8) }
        return answer.body
    }
}
