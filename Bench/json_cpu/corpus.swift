// Writes 8 push bodies of 25 generated reports (no `_id` in the doc, as Bench/writes_bench.py
// pushes them) to DIR/push-N.json, for Bench/json_cpu/cpu.swift (which says how to build both).
import Demo
import Foundation
import TidewayJSON

let dataRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Data/ofish")  // Bench/json_cpu/ → the repository
let sample = try DemoAgencies(dataDirectory: dataRoot)
let users = DemoUsers.all(agencies: sample.agencies)
var generator = ReportGenerator(seed: 42, agency: sample.agency(key: "WildAid")!, menu: sample.menu(for: "WildAid"),
                                officers: DemoUsers.officers(ofAgency: "WildAid", in: users),
                                now: Date(timeIntervalSince1970: 1_750_000_000))
let directory = CommandLine.arguments[1]
for p in 0..<8 {
    var changes: [JSON] = []
    for k in 0..<25 {
        var doc = generator.next()!.objectValue!
        doc["_id"] = nil
        let id = "bench-\(p)-\(k)"
        changes.append(["changeId": .string("c-\(id)"), "collection": "reports", "partition": "agency=WildAid",
                        "id": .string(id), "op": "insert", "doc": .object(doc)])
    }
    let text = JSON.object(["clientId": "bench", "changes": .array(changes)]).serialized()
    try text.write(toFile: "\(directory)/push-\(p).json", atomically: true, encoding: .utf8)
}
