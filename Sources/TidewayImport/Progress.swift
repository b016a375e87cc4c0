import Foundation

/// Documents per second and the time left (from the share of the files' bytes read), on
/// standard error, at most once a second.
struct Progress {
    let enabled: Bool
    var totalBytes = 0
    var doneBytes = 0
    var done = 0
    let started = Date()
    var lastPrint = Date.distantPast
    var printed = false

    init(enabled: Bool) { self.enabled = enabled }

    mutating func advance(_ count: Int, bytes: Int, label: String) {
        done += count
        doneBytes += max(0, bytes)
        guard enabled, Date().timeIntervalSince(lastPrint) >= 1 else { return }
        lastPrint = Date()
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(done) / elapsed
        let share = totalBytes > 0 ? min(1, Double(doneBytes) / Double(totalBytes)) : 1
        let eta = share > 0 ? elapsed * (1 - share) / share : 0
        let line = String(format: "import: %@: %d documents, %.0f%%, %.0f docs/s, ETA %d:%02d", label, done, share * 100, rate,
                          Int(eta) / 60, Int(eta) % 60)
        FileHandle.standardError.write(Data(("\r" + line + "    ").utf8))
        printed = true
    }

    mutating func finish() {
        if printed { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
