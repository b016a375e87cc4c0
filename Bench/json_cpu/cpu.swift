// The worker's per-document JSON cost in pushes of 25 reports, in process (no HTTP, no
// database; docs/performance/round-19.md): the push body's parse, each change's `_id`
// set in its doc (as Change does, the doc arriving without one as Bench/writes_bench.py pushes
// it), the collection's schema, the canonical serialization and the tree's free. Prints µs of
// thread CPU per document (with `parts`, split by step) and a checksum of every serialized
// byte, the same on every build that writes the same text. `vectors INPUTS.bin OUT.json` writes
// each input's outcome (Tests/Vectors/make_canonical_vectors.py; Tests/Vectors/canonical-text.json
// was made so by the eighteenth round's code).
//
// Not a target of the package (Tests/Architecture/check_layers.py keeps executables to its
// layers): to run it, add for the time of the measurement to Package.swift's targets
//   .executableTarget(name: "json-corpus", dependencies: ["Demo", "TidewayJSON"], path: "Bench/json_cpu",
//                     sources: ["corpus.swift"]),
//   .executableTarget(name: "json-cpu", dependencies: ["Schema", "TidewayJSON"], path: "Bench/json_cpu",
//                     sources: ["cpu.swift"]),
// then `swift build --product json-corpus && .build/debug/json-corpus DIR` (8 bodies of 25
// generated reports, seed 42), and for each build to compare
// `swift build -c release --product json-cpu && .build/release/json-cpu DIR 1500 [parts]`,
// copies of the binaries run in alternated legs (A B B A), medians.
import Foundation
import Schema
import TidewayJSON

func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) * 1e6 + Double(ts.tv_nsec) / 1e3
}

if CommandLine.arguments[1] == "vectors" {
    // vectors INPUTS.bin OUT.json: each input's outcome under the default limits and small ones.
    let file = Array(FileManager.default.contents(atPath: CommandLine.arguments[2])!)
    func outcome(_ bytes: [UInt8], _ limits: JSONLimits) -> JSON {
        do throws(JSONParseError) {
            return ["canonical": .string(try JSON(parsing: bytes, limits: limits).serialized())]
        } catch {
            return ["error": .string(error.message), "kind": .string("\(error.kind)")]
        }
    }
    var cases: [JSON] = []
    var offset = 0
    while offset < file.count {
        let length = file[offset..<offset + 4].reversed().reduce(0) { $0 << 8 | Int($1) }
        let bytes = Array(file[offset + 4..<offset + 4 + length])
        offset += 4 + length
        var entry: JSONObject = ["default": outcome(bytes, JSONLimits()),
                                     "small": outcome(bytes, JSONLimits(maxDepth: 3, maxStringBytes: 8, allowsNullCharacter: true))]
        if !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) { entry["text"] = .string(text) }
        else { entry["hex"] = .string(bytes.map { String(format: "%02x", $0) }.joined()) }
        cases.append(.object(entry))
    }
    let out = "[\n" + cases.map { $0.serialized() }.joined(separator: ",\n") + "\n]\n"
    try out.write(toFile: CommandLine.arguments[3], atomically: true, encoding: .utf8)
    exit(0)
}
let directory = CommandLine.arguments[1]
let bodies = (0..<8).map { Array(FileManager.default.contents(atPath: "\(directory)/push-\($0).json")!) }
let iterations = Int(CommandLine.arguments[2]) ?? 400
let parts = CommandLine.arguments.contains("parts")
let limits = JSONLimits(maxStringBytes: 1 << 20)

var checksum: UInt64 = 0xcbf29ce484222325
var times: [String: Double] = [:]
var documents = 0
let start = threadCPU()
for round in 0..<iterations {
    let body = bodies[round % bodies.count]
    var t0 = threadCPU()
    func lap(_ name: String) {
        if parts { let t = threadCPU(); times[name, default: 0] += t - t0; t0 = t }
    }
    do {
        let tree = try JSON(parsing: body, limits: limits)
        lap("parse")
        guard case .array(let raw)? = tree["changes"] else { fatalError() }
        var docs: [JSON] = []
        docs.reserveCapacity(raw.count)
        for value in raw {
            guard case .object(var doc)? = value["doc"] else { fatalError() }
            doc["_id"] = value["id"]
            docs.append(.object(doc))
        }
        lap("change")
        var checked: [JSON] = []
        checked.reserveCapacity(raw.count)
        for doc in docs { checked.append(try CollectionSchemas.validate(collection: "reports", document: doc).get()) }
        lap("validate")
        for doc in checked {
            let bytes = doc.serializedBytes()
            if round < bodies.count { for b in bytes { checksum = (checksum ^ UInt64(b)) &* 0x100000001b3 } }
        }
        documents += raw.count
        lap("serialize")
    } catch { fatalError("\(error)") }
    lap("free")
}
let total = (threadCPU() - start) / Double(documents)
let split = ["parse", "change", "validate", "serialize", "free"].map { "\($0) \(String(format: "%.1f", (times[$0] ?? 0) / Double(documents)))" }
print("µs per document: \(String(format: "%.1f", total))\(parts ? " (" + split.joined(separator: ", ") + ")" : "")  body bytes \(bodies[0].count)  checksum \(String(checksum, radix: 16))")
