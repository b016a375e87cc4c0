import Foundation

/// A request's FastCGI parameters, and its headers among them, looked up by name when asked.
///
/// nginx sends some thirty parameters (`REQUEST_METHOD`, `DOCUMENT_URI`, `HTTP_*` for each
/// header, ...) and a request reads about ten: they are kept as nginx sent them, copied
/// into one buffer with an index of where each starts, and found by a scan of the names.
/// Building a dictionary of every parameter, then one of every header, for each request
/// cost a tenth of the worker's CPU per idle poll (docs/performance/round-02.md, "Idle polls, this round").
/// When a name comes twice the last one counts, as it did in the dictionaries.
public struct RequestFields: Sendable {
    /// `NAME=VALUE` entries one after another, each ended by a 0 byte.
    private let bytes: [UInt8]
    /// Per entry, two numbers: where it starts in `bytes`, and where its first `=` is (the
    /// end of its name; for an entry without one, its 0 byte: never found). Knowing each name's
    /// length, a lookup compares only the names of that length (a scan of every entry for its
    /// `=`, per lookup, was a fiftieth of the worker's CPU per idle poll).
    private let index: [Int32]

    /// From the `NAME=VALUE` C strings of a NULL-terminated array (libfcgi's `envp`), copied.
    public init(entries: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) {
        var bytes: [UInt8] = []
        var index: [Int32] = []
        if var cursor = entries {
            bytes.reserveCapacity(2048)
            index.reserveCapacity(80)
            while let entry = cursor.pointee {
                let length = strlen(entry)
                let name = strchr(entry, Int32(UInt8(ascii: "="))).map { $0 - entry } ?? length
                index.append(Int32(bytes.count))
                index.append(Int32(bytes.count + name))
                bytes.append(contentsOf: UnsafeRawBufferPointer(start: entry, count: length + 1))
                cursor += 1
            }
        }
        self.bytes = bytes
        self.index = index
    }

    /// The same from names and values (requests built in process).
    public init(_ fields: [String: String] = [:]) {
        var bytes: [UInt8] = []
        var index: [Int32] = []
        for (name, value) in fields {
            index.append(Int32(bytes.count))
            // At the first `=`, as for libfcgi's entries (a name given with one is cut there).
            index.append(Int32(bytes.count + (name.utf8.firstIndex(of: UInt8(ascii: "=")).map { name.utf8.distance(from: name.utf8.startIndex, to: $0) } ?? name.utf8.count)))
            bytes += Array(name.utf8) + [UInt8(ascii: "=")] + Array(value.utf8) + [0]
        }
        self.bytes = bytes
        self.index = index
    }

    /// The parameter `name` as sent (`REMOTE_ADDR`, `CONTENT_TYPE`, `HTTP_USER_AGENT`).
    public subscript(name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in lastValue(nameLength: wanted.count) { $0.elementsEqual(wanted) } }
    }

    /// The value of the last entry whose name is `nameLength` bytes long and `matches`.
    private func lastValue(nameLength: Int, where matches: (UnsafeBufferPointer<UInt8>) -> Bool) -> String? {
        bytes.withUnsafeBufferPointer { all in
            var entry = index.count / 2
            while entry > 0 {
                entry -= 1
                let start = Int(index[2 * entry]), eq = Int(index[2 * entry + 1])
                guard eq - start == nameLength, all[eq] == UInt8(ascii: "="),
                      matches(UnsafeBufferPointer(rebasing: all[start..<eq])) else { continue }
                // The value without its 0 byte: up to the next entry's start, or the end.
                let end = (entry + 1 < index.count / 2 ? Int(index[2 * entry + 2]) : all.count) - 1
                return String(decoding: UnsafeBufferPointer(rebasing: all[(eq + 1)..<end]), as: UTF8.self)
            }
            return nil
        }
    }

    /// The header `name` (lower case with dashes: `user-agent`) from its `HTTP_USER_AGENT`
    /// parameter; `content-type` and `content-length` from the parameters nginx sends
    /// without the prefix when they are not empty.
    func header(_ name: String) -> String? {
        if name == "content-type" || name == "content-length" {
            if let value = self[name == "content-type" ? "CONTENT_TYPE" : "CONTENT_LENGTH"], !value.isEmpty { return value }
        }
        var name = name
        return name.withUTF8 { wanted in
            lastValue(nameLength: wanted.count + 5) { sent in
                sent.starts(with: "HTTP_".utf8)
                    && zip(sent.dropFirst(5), wanted).allSatisfy { HTTPRequest.headerNameByte($0) == $1 }
            }
        }
    }
}

/// A request's headers by lower-cased name (`authorization`, `content-type`, `cookie`, ...).
public struct RequestHeaders: Sendable {
    private enum Source: Sendable {
        /// Read from the FastCGI parameters: `HTTP_*`, `CONTENT_TYPE`, `CONTENT_LENGTH`.
        case params(RequestFields)
        /// Given by name (requests built in process).
        case given([String: String])
    }

    private let source: Source

    init(params: RequestFields) { source = .params(params) }
    init(_ headers: [String: String]) { source = .given(headers) }

    public subscript(name: String) -> String? {
        switch source {
        case .params(let params): params.header(name)
        case .given(let headers): headers[name]
        }
    }
}
