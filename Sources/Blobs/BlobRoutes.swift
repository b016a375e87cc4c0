import CoreMetrics
import Database
import FastCGI
import Foundation
import Support
import Sync
import TidewayJSON
import Web

/// `PUT|GET /api/v1/blobs/<photoId>` (sync-protocol.md, Blobs). The worker decides who may
/// do what; nginx sends the bytes of a GET from its internal `/_blobs/` location.
package enum BlobRoutes {
    /// `sync`: its listener and token cache, which downloads answered from memory rely on.
    package static func register(_ router: inout Router, sync: SyncService) {
        let memory = BlobMemory()
        router.put("/api/v1/blobs/:photoId", upload)
        router.get("/api/v1/blobs/:photoId") { try download($0, hub: sync.changes, memory: memory) }
    }

    /// The largest photo accepted (nginx's client_max_body_size is the same 16 MiB).
    package static let maxBytes = 16 * 1024 * 1024

    /// Where a photo's bytes are fetched from; what `pictureURL` says after an upload or offload.
    public static func pictureURL(photoID: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/;?#%")
        return "/api/v1/blobs/" + (photoID.addingPercentEncoding(withAllowedCharacters: allowed) ?? photoID)
    }

    static func photoID(_ context: RequestContext) throws -> String {
        guard let id = context.params["photoId"], !id.isEmpty, id.utf8.count <= 128 else {
            throw AppError.badRequest("a photo id is 1–128 bytes")
        }
        return id
    }

    static func upload(_ context: RequestContext) throws -> HTTPResponse {
        let id = try photoID(context)
        guard let type = context.request.headers["content-type"].flatMap(ImageType.init(contentType:)) else {
            throw AppError(.unsupportedMediaType, "expected Content-Type: image/jpeg, image/png or image/webp")
        }
        if let length = context.request.contentLength, length > maxBytes {
            throw AppError(.tooLarge, "a photo is at most \(maxBytes) bytes")
        }
        // The right first: a caller who may not write the photo gets a 403 and no file is made.
        // A photo the caller cannot see at all is refused alike (its existence is not told).
        try context.asAPICaller(readOnly: true) { tx, _ in
            let row = try tx.query("""
                select app.can_write(partition, 'photos') as write from sync.photos where id = \(id) and not deleted
                """, thenCommit: true).first
            guard row?.bool("write") == true else { throw AppError.forbidden("no write right on this photo") }
        }

        let store = BlobStore(root: context.app.config.blobRoot)
        let received = try receive(context.request.body, into: store)
        defer { received.discard() }
        guard received.count > 0 else { throw AppError.invalid("empty body: no photo bytes") }
        guard ImageType.sniff(received.head) == type else {
            throw AppError.invalid("the bytes are not \(type.rawValue) (checked by their first bytes)")
        }
        let sha = try blobCall { () throws(BlobStore.Failure) in try received.finish() }

        let answer = try context.asAPICaller { tx, caller -> JSON in
            guard let partition = try tx.query("""
                select partition from sync.photos where id = \(id) and not deleted and app.can_write(partition, 'photos') for update
                """).first?["partition"] else { throw AppError.forbidden("no write right on this photo") }
            _ = try tx.query("select app.lock_blob(\(sha))")
            try blobCall { () throws(BlobStore.Failure) in try store.place(received, sha: sha) }
            try attach(photoID: id, partition: partition, sha: sha, type: type, bytes: received.count, caller: caller,
                       limits: context.app.config.limits, in: tx)
            return ["photoId": .string(id), "sha256": .string(sha), "bytes": .int(Int64(received.count)),
                    "contentType": .string(type.rawValue), "pictureURL": .string(pictureURL(photoID: id))]
        }
        Counter(label: "tideway_blob_bytes_stored_total").increment(by: received.count)
        return .json(answer, headers: [("Cache-Control", "no-store")])
    }

    /// Records which content the photo names and points its document at it (through the
    /// write path, so clients see it in a pull); nothing is written when both already hold.
    package static func attach(photoID: String, partition: String, sha: String, type: ImageType, bytes: Int,
                       caller: CallerInfo, limits: Config.Limits, in tx: Transaction, extra: JSONObject = [:]) throws {
        let url = pictureURL(photoID: photoID)
        let (_, stored) = try tx.run(
            Statement.effect("""
            insert into app.photo_blobs (photo_id, partition, sha256, content_type, bytes)
            values (\(photoID), \(partition), \(sha), \(type.rawValue), \(Int64(bytes)))
            on conflict (photo_id) do update set sha256 = excluded.sha256, content_type = excluded.content_type,
                bytes = excluded.bytes, stored_at = now()
            """),
            Statement.value("select doc::text as doc from sync.photos where id = \(photoID) and partition = \(partition) and not deleted",
                            "doc", as: String.self))
        let doc = try stored.map { try JSON(parsing: $0, limits: .storedDocuments(documentBytes: limits.documentBytes)) }
        var patch = extra
        if doc?["pictureURL"]?.stringValue != url { patch["pictureURL"] = .string(url) }
        if doc?["picture"] != nil { patch["picture"] = .null }
        guard !patch.isEmpty else { return }
        let raw: JSON = ["changeId": .string("blob-\(sha)"), "collection": "photos", "partition": .string(partition),
                         "id": .string(photoID), "op": "update", "patch": .object(patch)]
        let change = try Result { () throws(ChangeRejection) in try Change(raw, changeID: "blob-\(sha)") }
            .mapError { AppError(.invalid, $0.message) }.get()
        let result = try WritePath.apply([.success(change)], clientID: nil, caller: caller, in: tx,
                                         limits: .init(documentBytes: limits.documentBytes))
        guard result.first?["status"]?.stringValue == "applied" else {
            let message = result.first?["error"]?["message"]?.stringValue ?? "refused"
            throw AppError(.conflict, "the photo document could not be updated: \(message)")
        }
    }

    /// Streams the body to a temp file, refusing more than `maxBytes` or less than declared.
    static func receive(_ body: RequestBody, into store: BlobStore) throws -> BlobStore.Upload {
        let upload = try blobCall { () throws(BlobStore.Failure) in try store.beginUpload(limit: maxBytes) }
        do {
            while true {
                let chunk = body.readChunk(max: 256 * 1024)
                if chunk.isEmpty { break }
                try blobCall { () throws(BlobStore.Failure) in try upload.write(chunk) }
            }
            if let declared = body.declaredLength, upload.count < declared { throw RequestBody.Failure.truncated }
        } catch {
            upload.discard()
            throw error
        }
        return upload
    }

    static func blobCall<T>(_ body: () throws(BlobStore.Failure) -> T) throws -> T {
        do {
            return try body()
        } catch .tooLarge {
            throw AppError(.tooLarge, "a photo is at most \(maxBytes) bytes")
        } catch .io(let detail) {
            Log.error("blob store: \(detail)")
            throw AppError(.internal, "the photo could not be stored")
        }
    }

    static func download(_ context: RequestContext, hub: ChangeHub, memory: BlobMemory) throws -> HTTPResponse {
        let id = try photoID(context)
        guard let token = context.bearerToken else { throw AppError.unauthenticated }
        let hash = Tokens.digest(token)
        // From memory when everything the statement below would check is known here: the
        // photo's content and partition (`BlobMemory`), the token valid, allowed to read that
        // partition and whose it is (`AuthCache`) — both learned from that statement, emptied
        // on every change that could make them wrong (repeatable/0094) — and known still once
        // the listener has heard every notification committed before this request
        // (`ChangeHub.barrier`): a revocation, a deleted or moved photo committed before the
        // download is always refused, as in PullRoute.unchanged.
        func known() -> (user: String, blob: BlobMemory.Blob)? {
            guard let blob = memory.blob(id, generation: hub.auth.generation),
                  let user = hub.auth.caller(hash, reading: blob.partition) else { return nil }
            return (user, blob)
        }
        if known() != nil && hub.barrier(), let hit = known() {
            context.loggedUserID = hit.user
            return answer(context, sha: hit.blob.sha256, type: hit.blob.contentType, bytes: hit.blob.bytes)
        }
        let seen = hub.auth.generation
        let asked = AuthCache.now()
        // One statement, its own transaction, prepared once per connection: app.blob_for_download
        // checks the token and reads the photo under its partition's rule (BEGIN, the claims,
        // the query and COMMIT were most of a download's PostgreSQL and worker time,
        // docs/performance/round-05.md). An unknown token fails the statement: 401.
        let row = try context.app.database.withConnection { connection in
            try connection.execute(.reused("select * from app.blob_for_download(\(SQLBytes(hash)), \(id))")).first
        }
        if let user = row?["user_id"] { context.loggedUserID = user }
        // Another agency's photo is not found, like one that does not exist.
        guard let row, let sha = row["sha256"], let type = row["content_type"] else {
            throw AppError.notFound("no stored bytes for this photo")
        }
        let bytes = row["bytes"].flatMap(Int64.init) ?? 0
        if let user = row["user_id"], let partition = row["partition"], let ttl = row["ttl"].flatMap(Double.init) {
            hub.auth.fill(hash, readable: [partition], seconds: ttl, asked: asked, since: seen, user: user)
            memory.fill(id, .init(partition: partition, sha256: sha, contentType: type, bytes: bytes),
                        since: seen, current: hub.auth.generation)
        }
        return answer(context, sha: sha, type: type, bytes: bytes)
    }

    /// Made once: making a counter by its label looks its series up (a key built, a map
    /// searched) on every download: 3 µs of the route's 29 µs in a loaded profile
    /// (docs/performance/round-07.md, "Blobs, seventh round").
    static let bytesServed = Counter(label: "tideway_blob_bytes_served_total")

    /// The answer to a download the caller may make: nginx sends the bytes (`/_blobs/`).
    static func answer(_ context: RequestContext, sha: String, type: String, bytes: Int64) -> HTTPResponse {
        let etag = "\"\(sha)\""
        let headers = [("ETag", etag), ("Cache-Control", "private")]
        if let condition = context.request.headers["if-none-match"], matches(condition, etag: etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        bytesServed.increment(by: bytes)
        return HTTPResponse(status: 200, headers: headers + [
            ("Content-Type", type), ("X-Accel-Redirect", "/_blobs/" + BlobStore.relativePath(sha: sha)),
        ])
    }

    /// If-None-Match: a list of entity tags (weak ones compare equal too), or `*`.
    static func matches(_ condition: String, etag: String) -> Bool {
        condition.split(separator: ",").contains { part in
            var tag = part.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }
}
