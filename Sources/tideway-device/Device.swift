import ArgumentParser
import Foundation
import TidewayClient
import TidewayModels

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An officer's phone or a chat user on the command line, built on TidewayClient: for tests,
/// demos and load. Its state (tokens, the SQLite store) lives in `--store`, so each call is
/// one launch of the "app" and a kill between or during calls is a killed app.
@main
struct Device: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tideway-device",
        abstract: "A Tideway device (an app on TidewayClient) on the command line.",
        subcommands: [Login.self, Logout.self, Open.self, FileReport.self, Edit.self, Delete.self, Get.self, List.self,
                      Sync.self, Watch.self, PhotoCommand.self, ChatCommand.self, Offline.self, Online.self, Status.self])
}

struct Global: ParsableArguments {
    @Option(help: "The device's folder (tokens and the SQLite store).") var store: String
    @Option(help: "The server, e.g. https://localhost:8443") var url = "https://localhost:8443"
    @Option(help: "A CA file to trust (the server's own CA).") var ca: String?

    func client() throws -> TidewayClient {
        try TidewayClient(directory: URL(fileURLWithPath: store), serverURL: url, caFile: ca)
    }
}

/// Prints a JSON value on one line.
func emit(_ value: JSONValue) {
    print(value.text())
}

func emitEncoded<T: Encodable>(_ value: T) throws {
    emit(try JSONValue.from(value))
}

/// A failure as JSON on stderr; exit 2 when the server was not reached, 1 otherwise.
func fail(_ error: any Error) -> ExitCode {
    let message = "\(error)"
    FileHandle.standardError.write(Data((JSONValue.object(["error": .string(message)]).text() + "\n").utf8))
    if let error = error as? TidewayError, case .network = error { return ExitCode(2) }
    return ExitCode(1)
}

struct Login: ParsableCommand {
    @OptionGroup var global: Global
    @Argument var email: String
    @Option var password = ProcessInfo.processInfo.environment["TIDEWAY_PASSWORD"] ?? "tideway-demo"
    @Option(help: "A name for this device (the sessions list).") var device: String?

    func run() throws {
        do {
            let user = try global.client().login(email: email, password: password, device: device)
            try emitEncoded(user)
        } catch { throw fail(error) }
    }
}

struct Logout: ParsableCommand {
    @OptionGroup var global: Global
    @Flag(help: "Also remove this login's local data.") var wipe = false

    func run() throws {
        do { try global.client().logout(wipe: wipe) } catch { throw fail(error) }
    }
}

struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Open partitions (default: the user's own document, every user's profile, the user's agency).")
    @OptionGroup var global: Global
    @Argument var partitions: [String] = []

    func run() throws {
        do {
            let client = try global.client()
            guard let user = client.user else { throw TidewayError.signedOut }
            var names = partitions
            if names.isEmpty {
                names = ["user=\(user.id)", "all-users=all-the-users"] + (user.agency.map { ["agency=\($0)"] } ?? [])
            }
            for name in names { try client.open(partition: name) }
            emit(.object(["opened": .array(names.map(JSONValue.string))]))
        } catch { throw fail(error) }
    }
}

struct FileReport: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "file-report", abstract: "File random boarding reports (offline or not: they are queued).")
    @OptionGroup var global: Global
    @Option(help: "How many reports.") var count = 1
    @Option(help: "The agency partition (default: the user's agency).") var partition: String?
    @Option(help: "A report id (with --count 1).") var id: String?
    @Option(help: "The vessel's name (default: random).") var vessel: String?
    @Option(help: "Photos per report.") var photos = 0
    @Option(help: "A JPEG to attach (default: random JPEG-like bytes, unique per photo).") var photo: String?
    @Option(help: "Bytes of each random photo.") var photoSize = 100_000
    @Option(help: "At most this many bytes: each random photo's size is drawn between --photo-size and this.") var photoSizeMax: Int?

    func run() throws {
        do {
            let client = try global.client()
            guard let user = client.user else { throw TidewayError.signedOut }
            guard let partition = partition ?? user.agency.map({ "agency=\($0)" }) else {
                throw TidewayError.local("the user has no agency: pass --partition")
            }
            let store = try client.store
            var ids: [String] = []
            var photoIds: [String] = []
            let given = try photo.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
            for index in 0..<count {
                var report = RandomReport.make(id: (count == 1 ? id : nil) ?? RandomReport.objectId(),
                                               officer: user, vessel: vessel, index: index)
                let attached = (0..<photos).map { _ in RandomReport.objectId() }
                if !attached.isEmpty { report.notes = [AnnotatedNote(note: "photos of the catch", photoIDs: attached)] }
                try store.insert(JSONValue.from(report), collection: "reports", partition: partition)
                for photoId in attached {
                    let size = photoSizeMax.map { Int.random(in: photoSize...max(photoSize, $0)) } ?? photoSize
                    let bytes = given ?? RandomReport.jpegLike(size: size)
                    let doc = Photo(_id: photoId, thumbNail: RandomReport.thumbnail, referencingReportID: report._id,
                                    date: report.timestamp)
                    try client.addPhoto(doc, bytes: bytes, partition: partition)
                }
                ids.append(report._id)
                photoIds += attached
            }
            emit(.object(["ids": .array(ids.map(JSONValue.string)), "photos": .array(photoIds.map(JSONValue.string))]))
        } catch { throw fail(error) }
    }
}

struct Edit: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Change a local document: the patch is applied here, and the library queues the merge patch of what changed.")
    @OptionGroup var global: Global
    @Argument var collection: String
    @Argument var id: String
    @Option(help: "A JSON Merge Patch to apply to the local document.") var patch: String

    func run() throws {
        do {
            let patch = try JSONValue.decode(patch)
            let change = try global.client().store.modify(collection, id) { doc in
                doc = MergePatch.apply(patch, to: doc)
            }
            emit(.object(["queued": change.map { .object(["changeId": .string($0.changeId), "patch": $0.body ?? .null]) } ?? .null]))
        } catch { throw fail(error) }
    }
}

struct Delete: ParsableCommand {
    @OptionGroup var global: Global
    @Argument var collection: String
    @Argument var id: String

    func run() throws {
        do {
            let change = try global.client().store.delete(collection, id)
            emit(.object(["queued": .object(["changeId": .string(change.changeId)])]))
        } catch { throw fail(error) }
    }
}

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "A local document, its send state and rejection.")
    @OptionGroup var global: Global
    @Argument var collection: String
    @Argument var id: String

    func run() throws {
        do {
            guard let stored = try global.client().store.document(collection, id) else {
                emit(.null)
                return
            }
            emit(.object(["partition": .string(stored.partition), "doc": stored.doc, "state": .string(stored.state),
                          "rejection": try stored.rejection.map { try JSONValue.from($0) } ?? .null]))
        } catch { throw fail(error) }
    }
}

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The ids of a collection's local documents.")
    @OptionGroup var global: Global
    @Argument var collection: String
    @Option var partition: String?

    func run() throws {
        do {
            let documents = try global.client().store.documents(collection, partition: partition)
            emit(.object(["ids": .array(documents.map { .string($0.id) })]))
        } catch { throw fail(error) }
    }
}

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Push the queue, pull the open partitions.")
    @OptionGroup var global: Global
    @Option(help: "Changes per push.") var batch = 500
    @Option(help: "Long-poll seconds when nothing changed.") var wait = 0
    @Flag(help: "Die (SIGKILL) after the first push's answer arrived, before recording it.") var dieAfterPush = false
    @Option(help: "Die (SIGKILL) after this many photo uploads were answered, before recording the last.") var dieAfterUploads: Int?
    @Option(help: "Seconds to pause between pushes (a slow link).") var pause: Double = 0
    @Flag(help: "Do not upload queued photos.") var noPhotos = false

    func run() throws {
        do {
            let client = try global.client()
            client.batchSize = batch
            client.pauseBetweenBatches = pause
            if dieAfterPush {
                client.afterPushAnswered = { kill(getpid(), SIGKILL) }
            }
            if let dieAfterUploads {
                client.afterUploadAnswered = { done in if done >= dieAfterUploads { kill(getpid(), SIGKILL) } }
            }
            let started = Date()
            var report = try JSONValue.from(client.sync(wait: wait))
            let synced = Date()
            if case .object(var fields) = report {
                if !noPhotos { fields["photos"] = try JSONValue.from(client.uploadPhotos()) }
                fields["seconds"] = ["records": .double(synced.timeIntervalSince(started)),
                                     "photos": .double(Date().timeIntervalSince(synced))]
                report = .object(fields)
            }
            emit(report)
        } catch { throw fail(error) }
    }
}

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stay connected: the event stream (or long polls) keeps the store current; one JSON line per event.")
    @OptionGroup var global: Global
    @Option(help: "How long to stay connected.") var seconds: Double = 30
    @Flag(help: "Ask for an events path that does not exist, as if a proxy blocked the stream: long polls carry on.") var blockEvents = false

    func run() throws {
        do {
            let client = try global.client()
            try client.live(seconds: seconds, blockEvents: blockEvents) { event in
                let now = JSONValue.double(Date().timeIntervalSince1970)
                switch event {
                case .streamOpen: emit(["event": "open", "at": now])
                case .streamDown(let reason): emit(["event": "down", "reason": .string(reason), "at": now])
                case .failed(let reason): emit(["event": "error", "reason": .string(reason), "at": now])
                case .synced(let report, let trigger):
                    emit(["event": "synced", "via": .string(trigger.rawValue), "pulled": .int(Int64(report.pulled)),
                          "pushed": .int(Int64(report.pushed)), "at": now])
                }
                fflush(nil)
            }
        } catch { throw fail(error) }
    }
}

struct PhotoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "photo", abstract: "Download a photo (cached, revalidated with its ETag).")
    @OptionGroup var global: Global
    @Argument var photoId: String
    @Option var out: String

    func run() throws {
        do {
            let data = try global.client().photo(photoId)
            try data.write(to: URL(fileURLWithPath: out))
            emit(.object(["bytes": .int(Int64(data.count))]))
        } catch { throw fail(error) }
    }
}

struct Offline: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stay off the network (writes are queued).")
    @OptionGroup var global: Global
    func run() throws {
        do { try global.client().setOffline(true) } catch { throw fail(error) }
    }
}

struct Online: ParsableCommand {
    @OptionGroup var global: Global
    func run() throws {
        do { try global.client().setOffline(false) } catch { throw fail(error) }
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The queue and sync state as JSON.")
    @OptionGroup var global: Global

    func run() throws {
        do {
            let client = try global.client()
            guard let user = client.user else {
                emit(.object(["signedIn": false]))
                return
            }
            let store = try client.store
            let queue = try store.queued()
            var counts: [String: JSONValue] = [:]
            for collection in ["reports", "photos", "dutyChanges", "menuData", "mpas", "agencyTasks", "teamDirectory", "users", "chatsters",
                               "chatMessages", "tasks", "teamNotes"] {
                let n = try store.count(collection)
                if n > 0 { counts[collection] = .int(Int64(n)) }
            }
            emit(.object([
                "signedIn": true,
                "user": try JSONValue.from(user),
                "online": .bool(!client.isOffline),
                "schemaVersion": .string(try store.meta("schemaVersion") ?? ""),
                "clientId": .string(try store.clientId),
                "pending": .int(Int64(queue.count)),
                "queue": .array(queue.map { .object(["changeId": .string($0.changeId), "op": .string($0.op),
                                                     "collection": .string($0.collection), "id": .string($0.id),
                                                     "partition": .string($0.partition), "state": .string($0.state)]) }),
                "partitions": .array(try store.partitions().map { try JSONValue.from($0) }),
                "documents": .object(counts),
                "uploads": .array(try store.uploads().map { .object(["photoId": .string($0.photoId), "bytes": .int(Int64($0.bytes)),
                                                                   "attempts": .int(Int64($0.attempts))]) }),
                "rejections": .array(try store.rejections().map { try JSONValue.from($0) }),
                "notices": .array(try store.notices().map { try JSONValue.from($0) }),
                "lastSync": (try store.meta("lastSync")).map(JSONValue.string) ?? .null,
                "lastError": (try store.meta("lastError")).map(JSONValue.string) ?? .null,
            ]))
        } catch { throw fail(error) }
    }
}
